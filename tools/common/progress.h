// One progress line for a command that works through a known number of items (tests,
// ops, runs): "12/300 tests  4.1/s  1:10 left  test_add_bcast", written to stderr and
// rewritten in place with \r, for the tools (phx-onnx-node-tests, phx-run-onnx,
// phx-conformance). Nothing is written unless stderr is a terminal and CI is unset in the
// environment, so logs and pipes never see it; and nothing before show_after has passed,
// so a short command stays quiet. docs/plots.md, "Progress on long work".
//
// Not thread-safe: one thread reports.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace phx_tools {

// Whether a progress line may be drawn on stderr: a terminal, and CI unset.
bool progress_wanted();

class Progress {
 public:
  // total: the number of items; unit: what they are, plural ("tests").
  Progress(size_t total, std::string unit,
           std::chrono::milliseconds show_after = std::chrono::seconds(2));
  ~Progress();  // erases the line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // done items finished; current: the item now running (may be empty). Redraws at most
  // ten times a second.
  void update(size_t done, std::string_view current = {});
  // Erases the line, so that other output starts on a clean one; the next update draws it
  // again.
  void clear();

 private:
  void draw();

  using Clock = std::chrono::steady_clock;
  const bool enabled_;
  const size_t total_;
  const std::string unit_;
  const std::chrono::milliseconds show_after_;
  const Clock::time_point start_;
  Clock::time_point last_draw_{};
  size_t done_ = 0;
  std::string current_;
  bool drawn_ = false;  // a line is on the terminal now
};

}  // namespace phx_tools
