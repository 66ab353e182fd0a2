#include "model/tts.h"

#include <string>
#include <vector>

#include "model/error.h"
#include "model/stage_builder.h"

namespace megacut::model {
namespace {

using build::StageBuilder;

constexpr int64_t kConvTileRows = 64;
constexpr int64_t kConvTargetTiles = 256;
// HiFi-GAN applies leaky ReLU with PyTorch's default slope before its last convolution.
constexpr double kFinalLeakySlope = 0.01;

// Convolutions: with few rows, one row tile and 16 output channels per tile (a matrix-vector
// product, like a decode step's linear); else 64-row tiles whose width is the widest of 128,
// 64, 32, 16 that divides the channels and still gives kConvTargetTiles tiles. Fewer than 16
// channels (a last convolution to samples) make one column tile.
Tiling conv_tiling(int64_t rows, int64_t cols) {
  if (cols < build::kGemvCols) {
    const int64_t tile_rows =
        std::max(kConvTileRows, (rows + kConvTargetTiles - 1) / kConvTargetTiles);
    return {rows, cols, std::min(rows, tile_rows), cols};
  }
  if (rows <= build::kFewRows) return {rows, cols, rows, build::kGemvCols};
  const int64_t row_tiles = (rows + kConvTileRows - 1) / kConvTileRows;
  int64_t tile_cols = build::kGemmMaxTileCols;
  while (tile_cols > build::kGemvCols &&
         (cols % tile_cols != 0 || row_tiles * (cols / tile_cols) < kConvTargetTiles)) {
    tile_cols /= 2;
  }
  return {rows, cols, kConvTileRows, tile_cols};
}

// A layer stack (weights `prefix` + "model.layers.N", ops `name_prefix` + "layers.N") and its
// final norm over the stage's rows, from embedded rows `x`; the norm keeps each sequence's last
// position. Returns the normed (batch, hidden) rows.
int layer_stack(StageBuilder& b, const DecoderConfig& c, const std::string& prefix, int x,
                const std::string& name_prefix = "") {
  for (int layer = 0; layer < c.num_layers; ++layer) {
    x = b.decoder_layer(c, prefix + "model.", name_prefix, layer, x);
  }
  return b.final_norm(c, prefix + "model.norm.weight", x);
}

// The talker's output from its normed rows: Qwen3-TTS's codec head and the greedy first code
// of the next frame; llama-hifigan-tts's frame head, the next acoustic frame.
void talker_head(StageBuilder& b, const ModelSpec& model, int h) {
  const DecoderConfig& c = model.decoder;
  const TtsConfig& tts = *model.tts;
  if (tts.codec) {
    b.head_and_argmax("head", "lm-head", {h},
                      b.weight("talker.codec_head.weight", {c.vocab_size, c.hidden_size}),
                      c.vocab_size);
    return;
  }
  const int frame = b.activation("frame", b.batch(), tts.frame_dim);
  b.add("frame_head", "linear", {h},
        {b.weight("talker.frame_head.weight", {tts.frame_dim, c.hidden_size})}, frame,
        build::linear_tiling(b.batch(), tts.frame_dim));
}

// Audio ops of one stage: tensors of rows x channels whose rows per sequence change as
// transposed convolutions upsample them.
class AudioBuilder {
 public:
  AudioBuilder(StageBuilder& b, int x, int64_t len, int64_t channels)
      : b_(b), x_(x), len_(len), channels_(channels) {}

  int x() const { return x_; }
  int64_t channels() const { return channels_; }
  int64_t rows() const { return b_.batch() * len_; }

  // conv1d over x: `lookahead` -1 centres it, 0 makes it causal.
  int conv(const std::string& name, const std::string& weight, int64_t out_channels, int64_t kernel,
           int64_t dilation, int64_t lookahead, int from = -1, int64_t groups = 1) {
    const int in = from < 0 ? x_ : from;
    if (lookahead < 0) lookahead = (kernel - 1) * dilation / 2;
    const int out = b_.activation(name, rows(), out_channels);
    b_.add(name, "conv1d", {in},
           {b_.weight(weight + ".weight", {out_channels, channels_ / groups, kernel}),
            b_.weight(weight + ".bias", {out_channels})},
           out, conv_tiling(rows(), out_channels),
           {{"kernel", double(kernel)},
            {"dilation", double(dilation)},
            {"groups", double(groups)},
            {"len", double(len_)},
            {"lookahead", double(lookahead)}});
    return out;
  }

  void set(int x, int64_t channels) {
    x_ = x;
    channels_ = channels;
  }

  void upsample(const std::string& name, const std::string& weight, int64_t out_channels,
                int64_t stride, int64_t kernel) {
    const int out = b_.activation(name, rows() * stride, out_channels);
    b_.add(name, "conv-transpose1d", {x_},
           {b_.weight(weight + ".weight", {channels_, out_channels, kernel}),
            b_.weight(weight + ".bias", {out_channels})},
           out, conv_tiling(rows() * stride, out_channels),
           {{"stride", double(stride)}, {"kernel", double(kernel)}, {"len", double(len_)}});
    len_ *= stride;
    set(out, out_channels);
  }

  // An elementwise op over tensor `in` (x by default) with per-channel weights.
  int elementwise(const std::string& name, std::string_view kind, std::vector<int> weights,
                  Attrs attrs = {}, int in = -1) {
    const int out = b_.activation(name, rows(), channels_);
    b_.add(name, kind, {in < 0 ? x_ : in}, std::move(weights), out,
           b_.elementwise_tiling(rows(), channels_), std::move(attrs));
    return out;
  }

  int snake(const std::string& name, const std::string& weight, int in = -1) {
    return elementwise(
        name, "snake-beta",
        {b_.weight(weight + ".alpha", {channels_}), b_.weight(weight + ".beta", {channels_})}, {},
        in);
  }

  int leaky(const std::string& name, double slope, int in = -1) {
    return elementwise(name, "leaky-relu", {}, {{"slope", slope}}, in);
  }

  int add(const std::string& name, int a, int c) {
    const int out = b_.activation(name, rows(), channels_);
    b_.add(name, "residual-add", {a, c}, {}, out, b_.elementwise_tiling(rows(), channels_));
    return out;
  }

  int add_scaled(const std::string& name, int a, int c, double scale) {
    const int out = b_.activation(name, rows(), channels_);
    b_.add(name, "add-scaled", {a, c}, {}, out, b_.elementwise_tiling(rows(), channels_),
           {{"scale", scale}});
    return out;
  }

 private:
  StageBuilder& b_;
  int x_;
  int64_t len_;
  int64_t channels_;
};

// Qwen3-TTS prefill: text embeddings projected to the talker, the talker, the codec head.
// llama-hifigan-tts prefill: the Llama talker and its frame head.
Graph prefill(const ModelSpec& model, const Stage& stage, int64_t batch) {
  const DecoderConfig& c = model.decoder;
  const TtsConfig& tts = *model.tts;
  StageBuilder b(stage, batch);
  const int ids = b.input("token_ids", DType::i32, {b.rows()});
  int x = b.activation("embed", c.hidden_size);
  if (tts.codec) {
    const int text = b.activation("text_embed", tts.text_hidden_size);
    b.add("text_embed", "embedding", {ids},
          {b.weight("talker.model.text_embedding.weight",
                    {tts.text_vocab_size, tts.text_hidden_size})},
          text, b.row_tiling(tts.text_hidden_size, tts.text_hidden_size));
    b.add("text_projection", "linear", {text},
          {b.weight("talker.text_projection.weight", {c.hidden_size, tts.text_hidden_size})}, x,
          build::linear_tiling(b.rows(), c.hidden_size));
  } else {
    b.add("embed", "embedding", {ids},
          {b.weight("talker.model.embed_tokens.weight", {c.vocab_size, c.hidden_size})}, x,
          b.row_tiling(c.hidden_size, c.hidden_size));
  }
  talker_head(b, model, layer_stack(b, c, "talker.", x));
  return b.finish();
}

// A talker decode step. Qwen3-TTS: the sum of the previous frame's codebook embeddings in,
// the next frame's first code out. llama-hifigan-tts: the previous frame in, the next out.
Graph decode(const ModelSpec& model, const Stage& stage, int64_t batch) {
  const DecoderConfig& c = model.decoder;
  const TtsConfig& tts = *model.tts;
  StageBuilder b(stage, batch);
  const int x = b.activation("embed", c.hidden_size);
  if (tts.codec) {
    const int64_t groups = tts.code_predictor->code_groups;
    const int codes = b.input("frame_codes", DType::i32, {b.rows(), groups});
    b.add("embed", "codebook-sum", {codes},
          {b.weight("talker.model.codec_embedding.weight", {groups * c.vocab_size, c.hidden_size})},
          x, b.row_tiling(c.hidden_size, c.hidden_size), {{"entries", double(c.vocab_size)}});
  } else {
    const int frame_in = b.input("prev_frame", DType::bf16, {b.rows(), tts.frame_dim});
    b.add("frame_embed", "linear", {frame_in},
          {b.weight("talker.frame_embed.weight", {c.hidden_size, tts.frame_dim})}, x,
          build::linear_tiling(b.rows(), c.hidden_size));
  }
  talker_head(b, model, layer_stack(b, c, "talker.", x));
  return b.finish();
}

// One code predictor step: the previous code's embedding (this step's table), the code
// predictor's layers, this step's head.
Graph code_predictor(const ModelSpec& model, const Stage& stage, int64_t batch) {
  const CodePredictorConfig& cp = *model.tts->code_predictor;
  const DecoderConfig& c = cp.decoder;
  StageBuilder b(stage, batch);
  const int ids = b.input("token_ids", DType::i32, {b.rows()});
  const int step = b.input("step", DType::i32, {1});
  const int x = b.activation("embed", c.hidden_size);
  const std::string prefix = "talker.code_predictor.";
  b.add("embed", "step-embedding", {ids, step},
        {b.weight(prefix + "model.codec_embedding.weight",
                  {cp.steps() * c.vocab_size, c.hidden_size})},
        x, b.row_tiling(c.hidden_size, c.hidden_size), {{"entries", double(c.vocab_size)}});
  // Its own op names, so its KV caches are not the talker's.
  const int h = layer_stack(b, c, prefix, x, "code_predictor.");
  b.head_and_argmax("head", "step-head", {h, step},
                    b.weight(prefix + "lm_head.weight", {cp.steps() * c.vocab_size, c.hidden_size}),
                    c.vocab_size);
  return b.finish();
}

// The Qwen3-TTS speech tokenizer's decoder over the chunk's frames:
//   codebook sum -> causal conv (kernel 3) -> input projection -> sliding-window transformer ->
//   output projection -> per upsampling ratio r: transposed conv (x r) and a ConvNeXt block
//   (depthwise conv 7, norm, pointwise 4x with GELU, residual) -> conv (kernel 7) to
//   decoder_dim -> per upsample rate r: SnakeBeta, transposed conv (x r, channels halve),
//   three residual units (SnakeBeta, conv 7 dilated 1, 3, 9, SnakeBeta, conv 1) -> SnakeBeta,
//   conv 7 to one channel: samples.
Graph codec(const ModelSpec& model, const Stage& stage, int64_t batch) {
  const CodecDecoderConfig& d = *model.tts->codec;
  const DecoderConfig& t = d.transformer;
  StageBuilder b(stage, batch);
  const int codes = b.input("frame_codes", DType::i32, {b.rows(), d.codebooks});
  const int sum = b.activation("quantizer", d.codebook_dim);
  b.add("quantizer", "codebook-sum", {codes},
        {b.weight("decoder.quantizer.codebooks.weight",
                  {d.codebooks * d.codebook_size, d.codebook_dim})},
        sum,
        b.row_tiling(d.codebook_dim, std::min<int64_t>(d.codebook_dim, build::kElementwiseCols)),
        {{"entries", double(d.codebook_size)}});
  AudioBuilder a(b, sum, stage.seq_len, d.codebook_dim);
  a.set(a.conv("pre_conv", "decoder.pre_conv.conv", d.latent_dim, 3, 1, 0), d.latent_dim);

  int x = b.activation("pre_transformer.input_proj", t.hidden_size);
  b.add("pre_transformer.input_proj", "linear", {a.x()},
        {b.weight("decoder.pre_transformer.input_proj.weight", {t.hidden_size, d.latent_dim})}, x,
        build::linear_tiling(b.rows(), t.hidden_size));
  for (int layer = 0; layer < t.num_layers; ++layer) {
    x = b.decoder_layer(t, "decoder.pre_transformer.", "pre_transformer.", layer, x,
                        d.sliding_window);
  }
  const int normed = b.activation("pre_transformer.norm", t.hidden_size);
  b.add("pre_transformer.norm", "rmsnorm", {x},
        {b.weight("decoder.pre_transformer.norm.weight", {t.hidden_size})}, normed,
        b.row_tiling(t.hidden_size, t.hidden_size), {{"eps", t.rms_norm_eps}});
  const int latent = b.activation("pre_transformer.output_proj", d.latent_dim);
  b.add("pre_transformer.output_proj", "linear", {normed},
        {b.weight("decoder.pre_transformer.output_proj.weight", {d.latent_dim, t.hidden_size})},
        latent, build::linear_tiling(b.rows(), d.latent_dim));
  a.set(latent, d.latent_dim);

  for (size_t i = 0; i < d.upsampling_ratios.size(); ++i) {
    const std::string n = "upsample." + std::to_string(i) + ".";
    const std::string w = "decoder.upsample." + std::to_string(i) + ".";
    const int64_t r = d.upsampling_ratios[i];
    a.upsample(n + "conv", w + "0.conv", d.latent_dim, r, 2 * r);
    const int residual = a.x();
    const int dw =
        a.conv(n + "dwconv", w + "1.dwconv.conv", d.latent_dim, 7, 1, 0, -1, d.latent_dim);
    const int64_t rows = a.rows(), wide = 4 * d.latent_dim;
    const int norm = b.activation(n + "norm", rows, d.latent_dim);
    b.add(n + "norm", "rmsnorm", {dw}, {b.weight(w + "1.norm.weight", {d.latent_dim})}, norm,
          b.row_tiling_over(rows, d.latent_dim, d.latent_dim), {{"eps", 1e-6}});
    const int up = b.activation(n + "pwconv1", rows, wide);
    b.add(n + "pwconv1", "linear", {norm}, {b.weight(w + "1.pwconv1.weight", {wide, d.latent_dim})},
          up, build::linear_tiling(rows, wide));
    const int act = b.activation(n + "gelu", rows, wide);
    b.add(n + "gelu", "gelu", {up}, {}, act, b.elementwise_tiling(rows, wide));
    const int down = b.activation(n + "pwconv2", rows, d.latent_dim);
    b.add(n + "pwconv2", "linear", {act}, {b.weight(w + "1.pwconv2.weight", {d.latent_dim, wide})},
          down, build::linear_tiling(rows, d.latent_dim));
    a.set(a.add(n + "residual", residual, down), d.latent_dim);
  }

  a.set(a.conv("decoder.0", "decoder.decoder.0.conv", d.decoder_dim, 7, 1, 0), d.decoder_dim);
  for (size_t i = 0; i < d.upsample_rates.size(); ++i) {
    const std::string n = "decoder." + std::to_string(i + 1) + ".";
    const std::string w = "decoder.decoder." + std::to_string(i + 1) + ".block.";
    const int64_t r = d.upsample_rates[i], out = a.channels() / 2;
    a.set(a.snake(n + "snake", w + "0"), a.channels());
    a.upsample(n + "conv", w + "1.conv", out, r, 2 * r);
    int unit = 0;
    for (int64_t dilation : {1, 3, 9}) {
      const std::string un = n + "unit." + std::to_string(unit) + ".";
      const std::string uw = w + std::to_string(unit + 2) + ".";
      const int s1 = a.snake(un + "snake1", uw + "act1");
      const int c1 = a.conv(un + "conv1", uw + "conv1.conv", out, 7, dilation, 0, s1);
      const int s2 = a.snake(un + "snake2", uw + "act2", c1);
      const int c2 = a.conv(un + "conv2", uw + "conv2.conv", out, 1, 1, 0, s2);
      a.set(a.add(un + "residual", a.x(), c2), out);
      ++unit;
    }
  }
  const std::string last = "decoder.decoder." + std::to_string(d.upsample_rates.size() + 1);
  a.set(a.snake("decoder.snake", last), a.channels());
  a.conv("audio", "decoder.decoder." + std::to_string(d.upsample_rates.size() + 2) + ".conv", 1, 7,
         1, 0);
  return b.finish();
}

// HiFi-GAN V1 over the chunk's frames: conv_pre (kernel 7), then per upsample rate: leaky
// ReLU, transposed conv (channels halve), and a multi-receptive-field block (per resblock
// kernel, per dilation: leaky ReLU, dilated conv, leaky ReLU, conv, residual; the branches
// averaged), then leaky ReLU, conv_post (kernel 7) to one channel, tanh. Convolutions are
// centred.
Graph vocoder(const ModelSpec& model, const Stage& stage, int64_t batch) {
  const VocoderConfig& v = *model.tts->vocoder;
  StageBuilder b(stage, batch);
  const int frames = b.input("frames", DType::bf16, {b.rows(), v.in_dim});
  AudioBuilder a(b, frames, stage.seq_len, v.in_dim);
  a.set(a.conv("conv_pre", "vocoder.conv_pre", v.initial_channels, 7, 1, -1), v.initial_channels);
  const auto kernels = static_cast<int64_t>(v.resblock_kernels.size());
  for (size_t i = 0; i < v.upsample_rates.size(); ++i) {
    const std::string n = "up." + std::to_string(i) + ".";
    a.set(a.leaky(n + "act", v.leaky_relu_slope), a.channels());
    a.upsample(n + "conv", "vocoder.upsampler." + std::to_string(i), a.channels() / 2,
               v.upsample_rates[i], v.upsample_kernels[i]);
    const int block_in = a.x();
    int sum = -1;
    for (int64_t j = 0; j < kernels; ++j) {
      const std::string rn = n + "mrf." + std::to_string(j) + ".";
      const std::string rw = "vocoder.resblocks." + std::to_string(int64_t(i) * kernels + j) + ".";
      const int64_t k = v.resblock_kernels[j];
      int branch = block_in;
      for (size_t m = 0; m < v.resblock_dilations[j].size(); ++m) {
        const std::string cn = rn + std::to_string(m) + ".";
        const std::string ms = std::to_string(m);
        const int t1 = a.leaky(cn + "act1", v.leaky_relu_slope, branch);
        const int c1 = a.conv(cn + "conv1", rw + "convs1." + ms, a.channels(), k,
                              v.resblock_dilations[j][m], -1, t1);
        const int t2 = a.leaky(cn + "act2", v.leaky_relu_slope, c1);
        const int c2 = a.conv(cn + "conv2", rw + "convs2." + ms, a.channels(), k, 1, -1, t2);
        branch = a.add(cn + "residual", branch, c2);
      }
      if (sum < 0) {
        sum = branch;
      } else {
        sum = a.add_scaled(rn + "sum", sum, branch,
                           j == kernels - 1 ? 1.0 / static_cast<double>(kernels) : 1.0);
      }
    }
    a.set(sum, a.channels());
  }
  a.set(a.leaky("post_act", kFinalLeakySlope), a.channels());
  const int post = a.conv("conv_post", "vocoder.conv_post", 1, 7, 1, -1);
  const int audio = b.activation("audio", a.rows(), 1);
  b.add("tanh", "tanh", {post}, {}, audio, b.elementwise_tiling(a.rows(), 1));
  return b.finish();
}

}  // namespace

Graph build_tts_stage(const ModelSpec& model, const Scenario& scenario, std::string_view stage) {
  if (!model.tts) throw Error(model.name + " is not a TTS pipeline");
  const Stage& s = scenario.stage(stage);
  if (s.name == "prefill") return prefill(model, s, scenario.batch);
  if (s.name == "decode") return decode(model, s, scenario.batch);
  if (s.name == "code-predictor") return code_predictor(model, s, scenario.batch);
  if (s.name == "codec") return codec(model, s, scenario.batch);
  return vocoder(model, s, scenario.batch);
}

}  // namespace megacut::model
