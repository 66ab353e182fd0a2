// The model shapes the GPU suites build graphs for: odd sizes that stress tile edges (hidden
// 72, vocab 1001, K not a multiple of 64, a group of 3 or 16 query heads per KV head) and the
// real shapes of Llama-3.2-1B and Qwen3-0.6B, one layer each.
#pragma once

#include <stdexcept>
#include <string>

#include "model/config.h"
#include "model/decoder.h"
#include "model/scenario.h"

namespace megacut::testing {

inline model::DecoderConfig decoder(std::string arch, int64_t hidden, int64_t heads,
                                    int64_t kv_heads, int64_t head_dim, int64_t intermediate,
                                    int64_t vocab) {
  model::DecoderConfig c;
  c.architecture = std::move(arch);
  c.hidden_size = hidden;
  c.num_layers = 1;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.head_dim = head_dim;
  c.intermediate_size = intermediate;
  c.vocab_size = vocab;
  c.max_position = 4096;
  return c;
}

inline model::DecoderConfig model_config(const std::string& name) {
  if (name == "odd") {  // Llama-style, Llama-3 RoPE scaling, group of 3, K = 72, 96, 200
    auto c = decoder("llama", 72, 6, 2, 16, 200, 1001);
    c.rope_theta = 500000;
    c.rope_scaling = {"llama3", 8.0, 1.0, 4.0, 64};
    c.tie_word_embeddings = true;
    return c;
  }
  if (name == "oddqwen") {  // Qwen3-style (qk-norm), one KV head for four query heads
    auto c = decoder("qwen3", 136, 4, 1, 32, 232, 777);
    c.rms_norm_eps = 1e-6;
    c.rope_theta = 1e6;
    c.qk_norm = true;
    return c;
  }
  if (name == "gqa16") {  // sixteen query heads per KV head: decode handles them 8 at a time
    auto c = decoder("llama", 256, 16, 1, 64, 512, 512);
    c.tie_word_embeddings = true;
    return c;
  }
  if (name == "wide") {  // hidden 2560: rows of more 16-byte chunks than a warp holds at once
    auto c = decoder("llama", 2560, 4, 1, 64, 512, 512);
    c.tie_word_embeddings = true;
    return c;
  }
  if (name == "llama1b") {  // Llama-3.2-1B, one layer
    auto c = decoder("llama", 2048, 32, 8, 64, 8192, 128256);
    c.rope_theta = 500000;
    c.rope_scaling = {"llama3", 32.0, 1.0, 4.0, 8192};
    c.tie_word_embeddings = true;
    return c;
  }
  if (name == "qwen06b") {  // Qwen3-0.6B, one layer
    auto c = decoder("qwen3", 1024, 16, 8, 128, 3072, 151936);
    c.rms_norm_eps = 1e-6;
    c.rope_theta = 1e6;
    c.qk_norm = true;
    c.tie_word_embeddings = true;
    return c;
  }
  throw std::invalid_argument("unknown test model " + name);
}

inline model::Graph build_stage(const std::string& model, int64_t seq_len, int64_t past_len,
                                int64_t batch) {
  const model::Stage stage{seq_len == 1 ? "decode" : "prefill", seq_len, past_len, 1, 0};
  return model::build_decoder_stage(model_config(model), stage, batch);
}

}  // namespace megacut::testing
