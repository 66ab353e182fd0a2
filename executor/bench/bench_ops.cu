// bench_ops: each op kind's conventional kernel at a model's real shapes (default
// Llama-3.2-1B at batch 1: decode after 128 cached positions, and prefill of 128 tokens), against
// the device's measured ceilings. llm.c dev/cuda style: warm-up, then the median of many timed
// replays; consecutive launches read different sets of random (never zero) buffers, as many
// sets as span twice the L2 (at most 256), so weights stream from memory as in a real step
// while small activations may stay in L2, as they do between ops.
//
// Each op's row: time per launch (CUDA events around a captured graph of kBatch launches, so
// host launch cost stays out; the gap between kernels stays in), GB/s over the fewest bytes the
// op must move (each input read once, the output written once), the share of the measured
// device-copy bandwidth, and TFLOP/s.
//
// Usage: bench_ops [model] [prompt_len] [batch] [--widths] [--json FILE]
//   --widths: also each linear of the stage re-tiled to every tile width the bodies take (16 to
//     128 columns), ours only, so that the stage builder's choice can be checked against them.
//   --json FILE: the rows of every linear and lm-head as a JSON list, {model, batch, stage, op,
//     m, n, k, provider, tile_cols, tile_body, us, tflops}.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "executor/bench/timing.h"
#include "executor/conventional.h"
#include "executor/cuda_check.h"
#include "executor/device.h"
#include "executor/op_support.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/scenario.h"

namespace megacut::executor {
namespace {

constexpr int kBatch = 20;    // launches per timed graph replay
constexpr int kReplays = 30;  // timed replays; the median is reported
constexpr int kWarmup = 3;    // untimed replays first
constexpr int64_t kAlign = 256;

__global__ void fill_random(uint16_t* p, int64_t n, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    uint64_t z = (seed + i) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z ^= z >> 31;
    // bf16 of magnitude 0.25 to 0.5 or 1 to 2, random sign and mantissa: never zero.
    p[i] = static_cast<uint16_t>(0x3e80 | ((z >> 8) & 0x7f) | ((z >> 20) & 0x8000) |
                                 ((z >> 30) & 0x0100));
  }
}

__global__ void fill_ids(int* p, int64_t n, int64_t vocab) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    p[i] = static_cast<int>((i * 7919 + 13) % vocab);
  }
}

int64_t round_up(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// The fewest bytes op `o` must move: each input element it uses read once, the output once.
int64_t floor_bytes(const model::Graph& g, const model::Op& o) {
  const std::string_view kind = o.kind->name();
  const model::Tiling& t = o.tiling;
  const int64_t out = t.rows * t.cols * model::dtype_bytes(g.tensor(o.output).dtype);
  auto a = [&](const char* key) { return o.attrs.i(key); };
  if (kind == "linear" || kind == "lm-head" || kind == "norm-linear") {  // glu: gate and up rows
    const int64_t k = g.tensor(o.inputs[0]).shape.back();
    const int64_t weight_rows = model::norm_linear_glu(o) ? 2 * t.cols : t.cols;
    return t.rows * k * 2 + weight_rows * k * 2 + out + (kind == "norm-linear" ? k * 2 : 0);
  }
  if (kind == "linear-residual") {  // x, W, the residual and y
    const int64_t k = g.tensor(o.inputs[0]).shape.back();
    return t.rows * k * 2 + t.cols * k * 2 + 2 * out;
  }
  if (kind == "attention" || kind == "qkv-attention") {
    const int64_t keys = a("past_len") + a("seq_len");
    return 2 * out + g.batch() * keys * 2 * a("kv_heads") * a("head_dim") * 2;
  }
  if (kind == "embedding") return t.rows * 4 + 2 * out;
  if (kind == "silu-mul") return 3 * out;
  if (kind == "residual-add") return 3 * out;
  if (kind == "argmax") return g.tensor(o.inputs[0]).bytes() + out;
  if (kind == "rmsnorm" || kind == "qk-norm") return 2 * out + g.tensor(o.weights[0]).bytes();
  return 2 * out;  // rope, kv-append: as many bytes in as out
}

// kSets copies of everything op `o` touches, in one arena, filled with random data.
struct OpBuffers {
  void* arena = nullptr;
  std::vector<StageBuffers> sets;
  ~OpBuffers() {
    if (arena) cudaFree(arena);
  }
};

void make_buffers(const model::Graph& g, const model::Op& o, int64_t l2_bytes, OpBuffers& b) {
  std::vector<int> tensors = o.inputs;
  tensors.push_back(o.output);
  int64_t set_bytes = 0;
  for (int id : tensors) set_bytes += round_up(g.tensor(id).bytes());
  int64_t weight_bytes = 0;
  for (int w : o.weights) weight_bytes += g.tensor(w).bytes();
  set_bytes += round_up(weight_bytes);
  const int64_t sets = std::clamp<int64_t>((2 * l2_bytes + set_bytes - 1) / set_bytes, 1, 256);
  CUDA_CHECK(cudaMalloc(&b.arena, sets * set_bytes));
  fill_random<<<1024, 256>>>(static_cast<uint16_t*>(b.arena), sets * set_bytes / 2, o.index);
  CUDA_CHECK(cudaGetLastError());
  char* p = static_cast<char*>(b.arena);
  for (int64_t s = 0; s < sets; ++s) {
    StageBuffers sb;
    sb.tensors.assign(g.tensors().size(), nullptr);
    sb.op_weights.assign(g.op_count(), nullptr);
    for (int id : tensors) {
      const model::Tensor& t = g.tensor(id);
      if (t.dtype == model::DType::i32 && id != o.output) {  // token ids: valid ones
        const int64_t vocab = g.tensor(o.weights.at(0)).shape.at(0);
        fill_ids<<<64, 256>>>(reinterpret_cast<int*>(p), t.elements(), vocab);
        CUDA_CHECK(cudaGetLastError());
      }
      sb.tensors[id] = p;
      p += round_up(t.bytes());
    }
    if (weight_bytes > 0) sb.op_weights[o.index] = p;
    p += round_up(weight_bytes);
    b.sets.push_back(std::move(sb));
  }
  CUDA_CHECK(cudaDeviceSynchronize());
}

// Median milliseconds of one replay of `exec` (kBatch launches).
float median_replay_ms(cudaGraphExec_t exec, cudaStream_t stream) {
  return median_event_ms(stream, kWarmup, kReplays,
                         [&] { CUDA_CHECK(cudaGraphLaunch(exec, stream)); });
}

// Microseconds per launch of op `o`, rotating through its buffer sets.
double time_op(const model::Graph& g, const model::Op& o, LinearProvider provider,
               KernelContext& context, const OpBuffers& b, cudaStream_t stream) {
  launch_op(g, o.index, b.sets[0], stream, provider, &context);  // plans, attributes, errors
  CUDA_CHECK(cudaStreamSynchronize(stream));
  // Different sets in each replay: kBatch consecutive sets per graph, several graphs.
  const int graphs = static_cast<int>(std::min<size_t>(4, (b.sets.size() + kBatch - 1) / kBatch));
  std::vector<cudaGraphExec_t> execs(graphs);
  for (int k = 0; k < graphs; ++k) {
    cudaGraph_t graph;
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < kBatch; ++i) {
      launch_op(g, o.index, b.sets[(k * kBatch + i) % b.sets.size()], stream, provider, &context);
    }
    CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    CUDA_CHECK(cudaGraphInstantiate(&execs[k], graph, 0));
    CUDA_CHECK(cudaGraphDestroy(graph));
  }
  std::vector<float> medians;
  for (cudaGraphExec_t exec : execs) medians.push_back(median_replay_ms(exec, stream));
  for (cudaGraphExec_t exec : execs) CUDA_CHECK(cudaGraphExecDestroy(exec));
  std::sort(medians.begin(), medians.end());
  return 1e3 * medians[medians.size() / 2] / kBatch;
}

double gemm_ceiling_tflops(KernelContext& context, cudaStream_t stream) {
  const int64_t n = 8192;
  void *a, *b, *c;
  CUDA_CHECK(cudaMalloc(&a, n * n * 2));
  CUDA_CHECK(cudaMalloc(&b, n * n * 2));
  CUDA_CHECK(cudaMalloc(&c, n * n * 2));
  fill_random<<<1024, 256>>>(static_cast<uint16_t*>(a), n * n, 2);
  fill_random<<<1024, 256>>>(static_cast<uint16_t*>(b), n * n, 3);
  CUDA_CHECK(cudaDeviceSynchronize());  // the fills ran on the legacy stream, the timing does not
  const float ms =
      median_event_ms(stream, 2, 7, [&] { context.lt_matmul(a, b, c, n, n, n, false, stream); });
  for (void* p : {a, b, c}) CUDA_CHECK(cudaFree(p));
  return 2.0 * n * n * n / (ms * 1e-3) / 1e12;
}

// A graph of one linear, x (rows, k) by W (n, k), cut into 128-row tiles (few rows: one) of
// `tile_cols` columns: op `o` of the stage re-tiled.
model::Graph retiled_linear(const model::Graph& g, const model::Op& o, int64_t tile_cols) {
  const int64_t rows = o.tiling.rows, n = o.tiling.cols, k = model::cols_of(g, o.inputs[0]);
  model::Graph probe(g.stage(), g.batch());
  const int x =
      probe.add_tensor({"x", model::TensorRole::activation, model::DType::bf16, {rows, k}});
  const int w = probe.add_tensor({"w", model::TensorRole::weight, model::DType::bf16, {n, k}});
  const int y =
      probe.add_tensor({"y", model::TensorRole::activation, model::DType::bf16, {rows, n}});
  probe.add_op(o.name, "linear", {x}, {w}, y, {rows, n, o.tiling.tile_rows, tile_cols}, o.attrs);
  probe.finalize();
  return probe;
}

// The ops worth a row: layer 0's ops and those outside the layer stack.
std::vector<int> ops_to_time(const model::Graph& g) {
  std::vector<int> ops;
  for (const model::Op& o : g.ops()) {
    if (o.layer <= 0) ops.push_back(o.index);
  }
  return ops;
}

int run(int argc, char** argv) {
  std::vector<std::string> positional;
  bool widths = false;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--widths") {
      widths = true;
    } else if (arg == "--json") {
      if (i + 1 == argc) throw std::runtime_error("--json needs a file name");
      json_path = argv[++i];
    } else if (arg.starts_with("--")) {
      throw std::runtime_error("unknown option " + arg +
                               " (usage: bench_ops [model] [prompt_len] [batch] [--widths] "
                               "[--json FILE])");
    } else {
      positional.push_back(arg);
    }
  }
  const std::string model_name = positional.size() > 0 ? positional[0] : "llama-3.2-1b";
  const int64_t prompt_len = positional.size() > 1 ? std::stoll(positional[1]) : 128;
  const int64_t batch = positional.size() > 2 ? std::stoll(positional[2]) : 1;
  nlohmann::json rows = nlohmann::json::array();
  const model::ModelSpec spec = model::load_model(model_name);
  const model::Scenario scenario = model::make_scenario(spec, batch, prompt_len);

  const DeviceInfo device = current_device();
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  KernelContext context;
  prepare_kernels();
  const double copy_gbs = copy_ceiling_gbs(stream);
  const double gemm_tflops = gemm_ceiling_tflops(context, stream);
  std::printf("bench_ops · %s · %d SMs · L2 %lld MB · model %s, batch %lld, prompt %lld\n",
              device.name.c_str(), device.sm_count, static_cast<long long>(device.l2_bytes >> 20),
              model_name.c_str(), static_cast<long long>(batch),
              static_cast<long long>(prompt_len));
  std::printf(
      "ceilings: device copy %.0f GB/s (1 GiB, read + write); cuBLASLt bf16 GEMM "
      "8192^3 %.0f TFLOP/s\n",
      copy_gbs, gemm_tflops);

  for (const std::string& stage : scenario.stage_names()) {
    const model::Graph g = model::build_graph(spec, scenario, stage);
    std::printf("\n== stage %s (seq_len %lld, past_len %lld)\n", stage.c_str(),
                static_cast<long long>(g.op(0).attrs.i("seq_len")),
                static_cast<long long>(g.op(0).attrs.i("past_len")));
    std::printf("%-24s %-12s %-8s %6s %-44s %9s %8s %6s %8s\n", "op", "kind", "provider", "tiles",
                "tile body", "us", "GB/s", "%copy", "TFLOP/s");
    // One row: op `op` of graph `graph` (the stage's, or a re-tiled probe of it, whose row the
    // table indents by `name_prefix`) by `provider`.
    auto time_row = [&](const model::Graph& graph, int op, LinearProvider provider,
                        const OpBuffers& buffers, const char* name_prefix) {
      const model::Op& o = graph.op(op);
      const double us = time_op(graph, o, provider, context, buffers, stream);
      const double gbs = floor_bytes(graph, o) / (us * 1e-6) / 1e9;
      const double tflops = graph.op_cost(op).flops / (us * 1e-6) / 1e12;
      std::string body = provider == LinearProvider::ours ? tile_body_name(graph, op) : "cuBLASLt";
      // The type as the compiler spells it, without its namespace wherever it appears.
      for (size_t at; (at = body.find("megacut::tiles::")) != std::string::npos;)
        body.erase(at, 16);
      const std::string name = name_prefix + o.name;
      std::printf("%-24s %-12s %-8s %6lld %-44s %9.2f %8.0f %5.0f%% %8.2f\n", name.c_str(),
                  std::string(o.kind->name()).c_str(), std::string(provider_name(provider)).c_str(),
                  static_cast<long long>(o.tiling.count()), body.c_str(), us, gbs,
                  100 * gbs / copy_gbs, tflops);
      if (o.kind->name() == "linear" || o.kind->name() == "lm-head") {
        rows.push_back({{"model", model_name},
                        {"batch", batch},
                        {"stage", stage},
                        {"op", o.name},
                        {"m", o.tiling.rows},
                        {"n", o.tiling.cols},
                        {"k", model::cols_of(graph, o.inputs[0])},
                        {"provider", provider_name(provider)},
                        {"tile_cols", provider == LinearProvider::ours ? o.tiling.tile_cols : 0},
                        {"tile_body", body},
                        {"us", us},
                        {"tflops", tflops}});
      }
    };
    for (int op : ops_to_time(g)) {
      const model::Op& o = g.op(op);
      OpBuffers buffers;
      make_buffers(g, o, device.l2_bytes, buffers);
      const bool matmul = o.kind->name() == "linear" || o.kind->name() == "lm-head";
      for (LinearProvider provider : {LinearProvider::ours, LinearProvider::cublaslt}) {
        if (provider == LinearProvider::cublaslt && !matmul) continue;
        time_row(g, op, provider, buffers, "");
      }
      if (!widths || o.kind->name() != "linear") continue;
      for (int64_t tile_cols : {16, 32, 64, 128}) {
        if (tile_cols == o.tiling.tile_cols) continue;
        const model::Graph probe = retiled_linear(g, o, tile_cols);
        OpBuffers probe_buffers;
        make_buffers(probe, probe.op(0), device.l2_bytes, probe_buffers);
        time_row(probe, 0, LinearProvider::ours, probe_buffers, "  ");
      }
    }
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
  if (!json_path.empty()) {
    std::ofstream file(json_path);
    file << rows.dump(1) << "\n";
    if (!file) throw std::runtime_error("cannot write " + json_path);
  }
  return 0;
}

}  // namespace
}  // namespace megacut::executor

int main(int argc, char** argv) {
  try {
    return megacut::executor::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_ops: %s\n", e.what());
    return 1;
  }
}
