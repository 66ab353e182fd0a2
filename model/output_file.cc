#include "model/output_file.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>

#include "model/error.h"

namespace megacut::model {
namespace {

namespace fs = std::filesystem;

// What a chain of symbolic links at `path` ends in (itself where it is none); a dangling link's
// target, which the rename then creates. Throws on a loop.
fs::path link_target(const fs::path& path) {
  fs::path p = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code error;
    if (!fs::is_symlink(fs::symlink_status(p, error))) return p;
    const fs::path next = fs::read_symlink(p, error);
    if (error) throw Error(path.string() + ": cannot read the link: " + error.message());
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  throw Error(path.string() + ": too many levels of symbolic links");
}

std::string system_reason() { return errno != 0 ? std::strerror(errno) : "unknown error"; }

// Writes into an open stream; false where the stream failed on the way.
bool fill_stream(std::ofstream& out, const std::function<void(std::ostream&)>& fill) {
  fill(out);
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace

void write_file(const fs::path& path, const std::function<void(std::ostream&)>& fill) {
  // What the path opens, through its links as the kernel follows them: /dev/stdout's chain ends
  // in /proc/self/fd/1, whose target text ("pipe:[...]") names no file to rename onto.
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (fs::is_directory(status)) throw Error(path.string() + ": is a directory, not a file");
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    errno = 0;
    std::ofstream out(path, std::ios::binary);
    if (!out) throw Error(path.string() + ": cannot open for writing: " + system_reason());
    if (!fill_stream(out, fill)) throw Error(path.string() + ": write failed: " + system_reason());
    return;
  }
  const fs::path target = link_target(path);

  // Unique among processes and threads writing the same file at once (the kernel cache).
  static std::atomic<unsigned long long> serial{0};
  fs::path temporary = target;
  temporary += ".tmp." + std::to_string(getpid()) + "." + std::to_string(serial++);
  auto discard = [&] {
    std::error_code ignored;
    fs::remove(temporary, ignored);
  };
  {
    errno = 0;
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw Error(path.string() + ": cannot create " + temporary.filename().string() + ": " +
                  system_reason());
    }
    bool written = false;
    try {
      written = fill_stream(out, fill);
      out.close();
      written = written && static_cast<bool>(out);
    } catch (...) {
      out.close();
      discard();
      throw;
    }
    if (!written) {
      const std::string reason = system_reason();
      discard();
      throw Error(path.string() + ": write failed: " + reason);
    }
  }
  fs::rename(temporary, target, error);
  if (error) {
    discard();
    throw Error(path.string() + ": cannot move the written file into place: " + error.message());
  }
}

void write_text_file(const fs::path& path, std::string_view text) {
  write_file(path,
             [&](std::ostream& out) { out.write(text.data(), std::streamsize(text.size())); });
}

}  // namespace megacut::model
