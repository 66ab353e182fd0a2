// Writing the commands' output files.
#pragma once

#include <filesystem>
#include <string>

namespace megacut::app {

// Writes `text` to `path` through a temporary file beside it, renamed into place, so that an
// interruption never leaves half a file; throws megacut::Error naming the path on failure.
void write_text_file(const std::filesystem::path& path, const std::string& text);

}  // namespace megacut::app
