// One progress line for work that goes through a known number of items or bytes:
// "12/300 nodes  4.1/s  1:10 left  conv1", written to stderr and rewritten in place with
// \r. The library draws it while it imports an ONNX model (libphynexus_onnx) and compiles
// a graph (libphynexus); the tools while they run tests, ops or runs (phx-onnx-node-tests,
// phx-run-onnx, phx-conformance). docs/plots.md, "Progress on long work".
//
// Nothing is written unless progress_wanted(), so that logs, pipes and programs that ask
// for silence never see it; and nothing before show_after has passed since the work began
// (2 s, PHX_PROGRESS_AFTER_MS for tests), so that short work stays quiet.
//
// This code is linked statically into each of libphynexus, libphynexus_onnx and the
// tools, so that no internal symbol joins a library's ABI: each copy draws one line at a
// time (the first Progress that draws keeps the line until it is cleared; the others
// count without drawing), and each line is written by one write(2), so that copies in two
// libraries may take turns on the line but never mix their text.
//
// A Progress is used by one thread; any number of them may exist in any threads.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace phx {

// Whether a progress line may be drawn: stderr is a terminal, CI is unset, PHX_PROGRESS
// is not 0 and PHX_LOG_LEVEL is not off (a program that silences the log silences this).
bool progress_wanted();

// Erases the line a Progress of this copy of the code has drawn, if any, so that other
// output to stderr (a log message) starts on a clean line; that Progress draws it again at
// its next update.
void erase_progress_line();

// What a Progress counts: items of its unit ("12/300 nodes  4.1/s"), or bytes, shown in
// kB, MB or GB ("1.2/3.4 GB of weights  85.0 MB/s").
enum class Amount { items, bytes };

class Progress {
 public:
  // total: how many items or bytes; unit: what they are, plural ("tests", "of weights").
  Progress(size_t total, std::string unit, Amount amount = Amount::items);
  ~Progress();  // erases the line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // done finished out of total; current: the item now at work (may be empty). Redraws at
  // most ten times a second, and always when done reaches total.
  void update(size_t done, std::string_view current = {});
  // The next stage of the same work (the nodes after the weights): the count starts again
  // at 0 of total, but show_after still counts from the start of the first stage, so that
  // work of several short stages is shown once it is long as a whole.
  void next_stage(size_t total, std::string unit, Amount amount = Amount::items);
  // Erases the line, so that other output starts on a clean one; the next update draws it
  // again.
  void clear();

 private:
  void draw(size_t done, std::string_view current);

  using Clock = std::chrono::steady_clock;
  const bool enabled_;
  const std::chrono::milliseconds show_after_;
  const Clock::time_point start_;
  Clock::time_point stage_start_;
  Clock::time_point last_draw_{};
  size_t total_;
  std::string unit_;
  Amount amount_;
};

}  // namespace phx
