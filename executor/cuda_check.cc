#include "executor/cuda_check.h"

#include <string>

namespace megacut::executor {

void throw_cuda_error(cudaError_t error, const char* expr, const char* file, int line) {
  throw Error(std::string(file) + ":" + std::to_string(line) + ": " + expr +
              " failed: " + cudaGetErrorName(error) + ": " + cudaGetErrorString(error));
}

}  // namespace megacut::executor
