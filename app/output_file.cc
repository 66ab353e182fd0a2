#include "app/output_file.h"

#include <fstream>
#include <system_error>

#include "model/error.h"

namespace megacut::app {

void write_text_file(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out || !(out << text)) throw Error(path.string() + ": cannot write file");
  }
  std::error_code error;
  std::filesystem::rename(tmp, path, error);
  if (error) {
    std::filesystem::remove(tmp, error);
    throw Error(path.string() + ": cannot write file (" + error.message() + ")");
  }
}

}  // namespace megacut::app
