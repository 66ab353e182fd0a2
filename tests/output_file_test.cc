// model::write_file: whole files or none, through symbolic links, in place on special files,
// and errors that name the path and the reason.
#include "model/output_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "model/error.h"
#include "tests/support/error_of.h"

namespace megacut::model {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A fresh directory per test, removed after.
class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("megacut_output_file_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // The directory's entries: what a write left behind beside the files it was asked for.
  int entries() const { return static_cast<int>(std::distance(fs::directory_iterator(dir_), {})); }
  fs::path dir_;
};

std::string message_of(const fs::path& path, std::string_view text) {
  return megacut::testing::error_of([&] { write_text_file(path, text); });
}

TEST_F(OutputFileTest, WritesAndReplacesAWholeFile) {
  const fs::path f = dir_ / "out.json";
  write_text_file(f, "first\n");
  EXPECT_EQ(read_all(f), "first\n");
  write_text_file(f, "second, longer\n");
  EXPECT_EQ(read_all(f), "second, longer\n");
  EXPECT_EQ(entries(), 1);  // no temporary file left
}

TEST_F(OutputFileTest, WritesThroughASymbolicLink) {
  const fs::path target = dir_ / "target.json", link = dir_ / "link.json";
  write_text_file(target, "old\n");
  fs::create_symlink("target.json", link);  // relative, as users make them
  write_text_file(link, "new\n");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_EQ(fs::read_symlink(link), "target.json");
  EXPECT_EQ(read_all(target), "new\n");
  // A link to a file not there yet creates the file.
  fs::create_symlink(dir_ / "later.json", dir_ / "dangling.json");
  write_text_file(dir_ / "dangling.json", "made\n");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir_ / "dangling.json")));
  EXPECT_EQ(read_all(dir_ / "later.json"), "made\n");
}

TEST_F(OutputFileTest, WritesSpecialFilesInPlace) {
  write_text_file("/dev/null", "discarded\n");  // not replaced by a regular file
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

// /dev/stdout onto a pipe is a chain of links ending in /proc/self/fd/N, whose target text
// ("pipe:[...]") is no path: the write goes through the descriptor, as a shell's would.
TEST_F(OutputFileTest, WritesThroughAProcessDescriptorLinkToAPipe) {
  int ends[2];
  ASSERT_EQ(pipe(ends), 0);
  fs::create_symlink("/proc/self/fd/" + std::to_string(ends[1]), dir_ / "out.json");
  write_text_file(dir_ / "out.json", "through the pipe\n");
  close(ends[1]);
  std::string got(64, '\0');
  const ssize_t n = read(ends[0], got.data(), got.size());
  close(ends[0]);
  ASSERT_GT(n, 0);
  got.resize(static_cast<size_t>(n));
  EXPECT_EQ(got, "through the pipe\n");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir_ / "out.json")));
}

TEST_F(OutputFileTest, ErrorsNameThePathAndTheReason) {
  const std::string on_dir = message_of(dir_, "x");
  EXPECT_NE(on_dir.find(dir_.string() + ": is a directory"), std::string::npos) << on_dir;
  const fs::path missing = dir_ / "no" / "such" / "dir" / "out.json";
  const std::string no_dir = message_of(missing, "x");
  EXPECT_NE(no_dir.find(missing.string()), std::string::npos) << no_dir;
  EXPECT_NE(no_dir.find("No such file or directory"), std::string::npos) << no_dir;
  fs::create_symlink("loop_b", dir_ / "loop_a");
  fs::create_symlink("loop_a", dir_ / "loop_b");
  const std::string loop = message_of(dir_ / "loop_a", "x");
  EXPECT_NE(loop.find("too many levels of symbolic links"), std::string::npos) << loop;
}

TEST_F(OutputFileTest, AFailedFillLeavesTheOldFile) {
  const fs::path f = dir_ / "keep.json";
  write_text_file(f, "kept\n");
  EXPECT_THROW(write_file(f, [](std::ostream& out) { out.setstate(std::ios::badbit); }), Error);
  EXPECT_THROW(write_file(f,
                          [](std::ostream& out) {
                            out << "half";
                            throw Error("interrupted");
                          }),
               Error);
  EXPECT_EQ(read_all(f), "kept\n");
  EXPECT_EQ(entries(), 1);
}

}  // namespace
}  // namespace megacut::model
