#!/usr/bin/env python3
"""Checks megacut's logits against Hugging Face transformers on the same weights.

Runs `megacut run` on a model with deterministic random weights, saving the checkpoint
(config.json + model.safetensors) and its outputs: the prompt, the prefill logits of each
sequence's last position, and the logits and tokens of N greedy decode steps. Then loads that
checkpoint into transformers (float32 compute on the bf16 weights) and runs the prompt plus
megacut's own greedy tokens through it in one forward pass, so every position megacut
produced a logit vector for is compared with the reference at the same position.

Pass: relative error ||ours - ref|| / ||ref|| <= 1e-2 at every position, and the same argmax
at >= 99% of positions. For scale, two more runs of transformers on the same checkpoint are
compared with the float32 reference the same way and printed beside it: in bf16, the error
that bf16 activations bring; and in float32 with one rounding, of the final norm's output (the
lm-head's input) to bf16, the least error of any engine that keeps that vector in bf16. Needs
torch, transformers and safetensors (on the GPU machine).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

REL_ERROR_LIMIT = 1e-2
ARGMAX_MATCH_LIMIT = 0.99


def run_megacut(args, work):
    checkpoint = os.path.join(work, "checkpoint")
    outputs = os.path.join(work, "outputs.safetensors")
    cmd = [args.megacut, "run", "--model", args.model, "--batch", str(args.batch),
           "--prompt-len", str(args.prompt_len), "--runs", "1", "--save-weights", checkpoint,
           "--dump", outputs, "--dump-steps", str(args.steps)]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return checkpoint, load_file(outputs)


def round_to_bf16(module, inputs, output):
    return output.to(torch.bfloat16).to(output.dtype)


def reference_logits(checkpoint, tokens, device):
    """Logits of transformers on the same (bf16) weights: in float32, in float32 with the
    final norm's output rounded to bf16, and in bfloat16."""
    model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32,
                                                 attn_implementation="eager").to(device)
    model.eval()
    ids = tokens.to(device).long()
    with torch.no_grad():
        fp32 = model(input_ids=ids, use_cache=False).logits.float().cpu()
        hook = model.model.norm.register_forward_hook(round_to_bf16)
        one_rounding = model(input_ids=ids, use_cache=False).logits.float().cpu()
        hook.remove()
        bf16 = model.to(torch.bfloat16)(input_ids=ids, use_cache=False).logits.float().cpu()
    return fp32, one_rounding, bf16


def compare(ours, theirs):
    rel = (ours.double() - theirs.double()).norm(dim=-1) / theirs.double().norm(dim=-1)
    same = ours.argmax(-1) == theirs.argmax(-1)
    return {"max_rel_error": rel.max().item(), "mean_rel_error": rel.mean().item(),
            "argmax_match": same.float().mean().item(), "positions": int(same.numel())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--megacut", required=True, help="path to the megacut binary")
    parser.add_argument("--model", required=True)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--prompt-len", type=int, default=128)
    parser.add_argument("--steps", type=int, default=8, help="greedy decode steps compared")
    parser.add_argument("--out", help="write the result as JSON here")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"

    with tempfile.TemporaryDirectory() as work:
        checkpoint, out = run_megacut(args, work)
        prompt = out["prompt_tokens"]            # (B, P) int32
        prefill = out["prefill_logits"]          # (B, V) f32
        decode = out["decode_logits"]            # (N, B, V) f32
        decode_tokens = out["decode_tokens"]     # (N, B) int32: the token fed at each step
        steps = decode.shape[0]
        sequence = torch.cat([prompt, decode_tokens.t()], dim=1)  # (B, P + N)
        ref, ref_one_rounding, ref_bf16 = reference_logits(checkpoint, sequence, device)

    p = prompt.shape[1]
    ours = torch.cat([prefill.unsqueeze(1), decode.transpose(0, 1)], dim=1)  # (B, 1 + N, V)
    window = slice(p - 1, p + steps)
    result = {"model": args.model, "batch": args.batch, "prompt_len": args.prompt_len,
              "decode_steps": steps, "reference": "transformers float32",
              "rel_error_limit": REL_ERROR_LIMIT, "argmax_match_limit": ARGMAX_MATCH_LIMIT}
    result.update(compare(ours, ref[:, window, :]))
    result["transformers_bf16"] = compare(ref_bf16[:, window, :], ref[:, window, :])
    result["transformers_final_norm_bf16"] = compare(ref_one_rounding[:, window, :],
                                                     ref[:, window, :])
    result["passed"] = (result["max_rel_error"] <= REL_ERROR_LIMIT and
                        result["argmax_match"] >= ARGMAX_MATCH_LIMIT)
    hf = result["transformers_bf16"]
    one = result["transformers_final_norm_bf16"]
    print(f"{args.model}: batch {args.batch}, P={args.prompt_len}, {steps} decode steps, "
          f"{result['positions']} positions, against transformers float32:\n"
          f"  megacut (bf16)       max rel error {result['max_rel_error']:.2e} "
          f"(mean {result['mean_rel_error']:.2e}), argmax match "
          f"{100 * result['argmax_match']:.1f}%\n"
          f"  transformers (bf16)  max rel error {hf['max_rel_error']:.2e} "
          f"(mean {hf['mean_rel_error']:.2e}), argmax match {100 * hf['argmax_match']:.1f}%\n"
          f"  transformers (float32, final norm's output in bf16)  max rel error "
          f"{one['max_rel_error']:.2e} (mean {one['mean_rel_error']:.2e}), argmax match "
          f"{100 * one['argmax_match']:.1f}%\n"
          f"  limits: rel error <= {REL_ERROR_LIMIT:.0e}, argmax match >= "
          f"{100 * ARGMAX_MATCH_LIMIT:.0f}% -> {'PASS' if result['passed'] else 'FAIL'}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
    sys.exit(0 if result["passed"] else 1)


if __name__ == "__main__":
    main()
