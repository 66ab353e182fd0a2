// Writing files whole: the one way megacut writes a result, a profile, a checkpoint or a cached
// kernel.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <string_view>

namespace megacut::model {

// Writes a file whole or not at all: `fill` writes the contents into a temporary file beside the
// destination, which is then renamed over it, so that an interruption, or a reader in another
// process, never sees half a file. A destination that is a symbolic link is written through: its
// target is replaced and the link left as it is. One that exists and is neither a regular file
// nor a directory (/dev/stdout, a pipe) is written in place, as there is nothing to rename over.
// A directory, a stream that `fill` leaves failed, or a failure to create, write or rename
// throws Error naming the path and the system's reason; the temporary file is removed.
void write_file(const std::filesystem::path& path, const std::function<void(std::ostream&)>& fill);

// write_file with `text` as the contents.
void write_text_file(const std::filesystem::path& path, std::string_view text);

}  // namespace megacut::model
