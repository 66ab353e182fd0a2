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
import time, torch
t0 = time.time()
from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM
torch.manual_seed(0)

def bf(x): return x.to(torch.bfloat16).to(torch.float32)
def out_hook(m, i, o):
    if isinstance(o, tuple): return (bf(o[0]),) + tuple(o[1:])
    return bf(o)
def in_hook(m, args): return (bf(args[0]),) + tuple(args[1:])

def build(kind):
    if kind == "llama":
        c = LlamaConfig(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                        num_attention_heads=32, num_key_value_heads=8, head_dim=64, rms_norm_eps=1e-5,
                        tie_word_embeddings=True, attn_implementation="eager")
        cls = LlamaForCausalLM
    else:
        c = Qwen3Config(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                        num_attention_heads=16, num_key_value_heads=8, head_dim=128, rms_norm_eps=1e-6,
                        tie_word_embeddings=True, attn_implementation="eager")
        cls = Qwen3ForCausalLM
    with torch.device("cuda"):
        m = cls(c)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if p.dim() == 1: p.copy_(bf(1 + (torch.rand_like(p) * 0.2 - 0.1)))
            else: p.copy_(bf(torch.randn_like(p) * 0.02))
    m.eval()
    return m, c.vocab_size

def variant(m, which):
    hs = []
    for name, mod in m.named_modules():
        cn = type(mod).__name__
        branch = isinstance(mod, torch.nn.Linear) and not name.endswith("lm_head")
        norm = cn.endswith("RMSNorm")
        if which in ("branch", "branch+layer_out") and (branch or norm):
            hs.append(mod.register_forward_hook(out_hook))
        if which in ("branch", "branch+layer_out") and (name.endswith("o_proj") or name.endswith("down_proj")):
            hs.append(mod.register_forward_pre_hook(in_hook))
        if which == "branch+layer_out" and cn.endswith("DecoderLayer"):
            hs.append(mod.register_forward_hook(out_hook))
        if which == "layer_out" and cn.endswith("DecoderLayer"):
            hs.append(mod.register_forward_hook(out_hook))
        if which == "final_norm" and name == "model.norm":
            hs.append(mod.register_forward_hook(out_hook))
    return hs

def compare(a, b):
    rel = (a.double() - b.double()).norm(dim=-1) / b.double().norm(dim=-1)
    same = (a.argmax(-1) == b.argmax(-1)).double()
    return f"max rel {rel.max().item():.2e} mean {rel.mean().item():.2e} argmax {100*same.mean().item():.1f}% of {same.numel()}"

for kind in ("llama", "qwen3"):
    m, vocab = build(kind)
    ids = torch.randint(0, vocab, (8, 144), device="cuda")
    with torch.no_grad():
        ref = m(input_ids=ids, use_cache=False).logits.float()
        print(kind, "built+ref at", round(time.time() - t0, 1), "s", flush=True)
        for which in ("final_norm", "layer_out", "branch", "branch+layer_out"):
            hs = variant(m, which)
            out = m(input_ids=ids, use_cache=False).logits.float()
            for h in hs: h.remove()
            print(f"  {kind} {which:18s} {compare(out, ref)}", flush=True)
            del out
        mb = m.to(torch.bfloat16)
        out = mb(input_ids=ids, use_cache=False).logits.float()
        print(f"  {kind} {'all bf16':18s} {compare(out, ref)}", flush=True)
    del m, mb, out, ref
    torch.cuda.empty_cache()
print("done at", round(time.time() - t0, 1), "s")
