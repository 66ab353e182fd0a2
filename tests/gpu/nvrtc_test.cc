// The tile-body headers compile under NVRTC, as the megakernel's per-region specialization
// will compile them: every body the bundled models use, each behind a kernel in one program.
// NVRTC needs no GPU, so this runs in CI.
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <set>
#include <string>
#include <vector>

#include "executor/op_support.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/scenario.h"

namespace megacut::testing {
namespace {

TEST(Nvrtc, CompilesEveryTileBodyTheModelsUse) {
  std::set<std::string> bodies;
  for (const std::string& name : model::bundled_models()) {
    const model::ModelSpec spec = model::load_model(name);
    for (int64_t batch : {1, 8, 32, 100}) {
      const model::Scenario scenario = model::make_scenario(spec, batch, 128);
      for (const std::string& stage : scenario.stage_names()) {
        const model::Graph g = model::build_graph(spec, scenario, stage);
        for (int op = 0; op < g.op_count(); ++op) bodies.insert(executor::tile_body_name(g, op));
      }
    }
  }
  std::string source;
  for (const char* header :
       {"argmax", "attention", "audio_elementwise", "codebook_sum", "conv", "embedding",
        "kv_append", "linear", "qk_norm", "residual_add", "rmsnorm", "rope", "silu_mul"}) {
    source += "#include \"executor/tiles/" + std::string(header) + ".cuh\"\n";
  }
  // A streamed body's run also takes the CTA's weight cursor, a mapped body's its tensor maps.
  source +=
      "template <class B>\n__device__ void run_one(const typename B::Layout& l, char* smem) {\n"
      "  if constexpr (megacut::tiles::StreamedBody<B>) {\n"
      "    megacut::tiles::StreamCursor c{};\n    B::run(l, blockIdx.x, smem, c);\n"
      "  } else if constexpr (megacut::tiles::MappedBody<B>) {\n"
      "    B::run(l, blockIdx.x, smem, static_cast<const char*>(nullptr));\n"
      "  } else {\n    B::run(l, blockIdx.x, smem);\n  }\n}\n";
  int k = 0;
  for (const std::string& body : bodies) {
    source += "extern \"C\" __global__ void task" + std::to_string(k++) + "(" + body +
              "::Layout l) {\n  extern __shared__ char smem[];\n  run_one<" + body +
              ">(l, smem);\n}\n";
  }
  nvrtcProgram program;
  ASSERT_EQ(nvrtcCreateProgram(&program, source.c_str(), "region.cu", 0, nullptr, nullptr),
            NVRTC_SUCCESS);
  const std::string include_root = std::string("-I") + MEGACUT_SOURCE_DIR;
  const std::string include_cuda = std::string("-I") + MEGACUT_CUDA_INCLUDE;
  const std::vector<const char*> options = {"--gpu-architecture=compute_90", "-std=c++20",
                                            include_root.c_str(), include_cuda.c_str()};
  const nvrtcResult result =
      nvrtcCompileProgram(program, static_cast<int>(options.size()), options.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  nvrtcGetProgramLog(program, log.data());
  nvrtcDestroyProgram(&program);
  EXPECT_EQ(result, NVRTC_SUCCESS) << log << "\n" << source;
  EXPECT_GE(bodies.size(), 10u);
}

}  // namespace
}  // namespace megacut::testing
