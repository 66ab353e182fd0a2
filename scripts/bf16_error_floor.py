#!/usr/bin/env python3
"""How far bf16 activations alone put Hugging Face transformers from its own float32 run.

The logits check (check_against_transformers.py) asks for a relative error <= 1e-2 and the
same argmax at >= 99% of positions against transformers in float32. This measures what any
engine that stores activations in bf16 can reach on random weights, with no engine of ours
involved: Llama-3.2-1B- and Qwen3-0.6B-shaped models, random weights drawn as megacut draws
them (normal(0, 0.02) matrices, 1 + uniform(-0.1, 0.1) norm scales, all bf16 values), 8
random sequences of 144 tokens, every position compared. Each variant is the float32 model
with forward hooks that round some activations to bf16:
  final_norm        the final norm's output (the lm-head's input) only;
  layer_out         each decoder layer's output (the residual stream, once per layer);
  branch            every linear's and norm's output and o_proj's and down_proj's inputs
                    (the attention output, the silu-mul output), the residual stream kept
                    in float32;
  branch+layer_out  both;
  all bf16          the whole model in bfloat16 (what the logits check prints beside ours).
Needs torch and transformers and a GPU (on the GPU machine); takes about 15 s there.
"""
import time

import torch

start = time.time()
from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM

torch.manual_seed(0)


def to_bf16_and_back(x):
    return x.to(torch.bfloat16).to(torch.float32)


def round_output(module, inputs, output):
    if isinstance(output, tuple):
        return (to_bf16_and_back(output[0]),) + tuple(output[1:])
    return to_bf16_and_back(output)


def round_input(module, args):
    return (to_bf16_and_back(args[0]),) + tuple(args[1:])


def build(kind):
    """A random model of the given shape on the GPU, its weights drawn as megacut draws them."""
    if kind == "llama":
        config = LlamaConfig(vocab_size=128256, hidden_size=2048, intermediate_size=8192,
                             num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                             head_dim=64, rms_norm_eps=1e-5, tie_word_embeddings=True,
                             attn_implementation="eager")
        model_class = LlamaForCausalLM
    else:
        config = Qwen3Config(vocab_size=151936, hidden_size=1024, intermediate_size=3072,
                             num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
                             head_dim=128, rms_norm_eps=1e-6, tie_word_embeddings=True,
                             attn_implementation="eager")
        model_class = Qwen3ForCausalLM
    with torch.device("cuda"):
        model = model_class(config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if parameter.dim() == 1:
                parameter.copy_(to_bf16_and_back(1 + (torch.rand_like(parameter) * 0.2 - 0.1)))
            else:
                parameter.copy_(to_bf16_and_back(torch.randn_like(parameter) * 0.02))
    model.eval()
    return model, config.vocab_size


def add_rounding(model, which):
    """Hooks that round the activations of variant `which` to bf16; returns their handles."""
    handles = []
    for name, module in model.named_modules():
        class_name = type(module).__name__
        branch = isinstance(module, torch.nn.Linear) and not name.endswith("lm_head")
        norm = class_name.endswith("RMSNorm")
        if which in ("branch", "branch+layer_out") and (branch or norm):
            handles.append(module.register_forward_hook(round_output))
        if which in ("branch", "branch+layer_out") and (name.endswith("o_proj") or
                                                        name.endswith("down_proj")):
            handles.append(module.register_forward_pre_hook(round_input))
        if which == "branch+layer_out" and class_name.endswith("DecoderLayer"):
            handles.append(module.register_forward_hook(round_output))
        if which == "layer_out" and class_name.endswith("DecoderLayer"):
            handles.append(module.register_forward_hook(round_output))
        if which == "final_norm" and name == "model.norm":
            handles.append(module.register_forward_hook(round_output))
    return handles


def compare(ours, reference):
    rel = (ours.double() - reference.double()).norm(dim=-1) / reference.double().norm(dim=-1)
    same = (ours.argmax(-1) == reference.argmax(-1)).double()
    return (f"max rel {rel.max().item():.2e} mean {rel.mean().item():.2e} "
            f"argmax {100*same.mean().item():.1f}% of {same.numel()}")


for kind in ("llama", "qwen3"):
    model, vocab = build(kind)
    ids = torch.randint(0, vocab, (8, 144), device="cuda")
    with torch.no_grad():
        reference = model(input_ids=ids, use_cache=False).logits.float()
        print(kind, "built+ref at", round(time.time() - start, 1), "s", flush=True)
        for which in ("final_norm", "layer_out", "branch", "branch+layer_out"):
            handles = add_rounding(model, which)
            logits = model(input_ids=ids, use_cache=False).logits.float()
            for handle in handles:
                handle.remove()
            print(f"  {kind} {which:18s} {compare(logits, reference)}", flush=True)
            del logits
        model_bf16 = model.to(torch.bfloat16)
        logits = model_bf16(input_ids=ids, use_cache=False).logits.float()
        print(f"  {kind} {'all bf16':18s} {compare(logits, reference)}", flush=True)
    del model, model_bf16, logits, reference
    torch.cuda.empty_cache()
print("done at", round(time.time() - start, 1), "s")
