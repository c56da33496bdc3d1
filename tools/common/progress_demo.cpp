// phx_progress_demo ITEMS [SHOW_AFTER_MS]: counts ITEMS items of 20 ms each through
// Progress, then prints "done" on stdout; test_progress.py runs it on a pseudo-terminal,
// on a pipe and with CI set, to see when the line is drawn.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "progress.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: phx_progress_demo ITEMS [SHOW_AFTER_MS]\n");
    return 2;
  }
  const size_t items = std::strtoul(argv[1], nullptr, 10);
  const auto show_after = std::chrono::milliseconds(argc > 2 ? std::atoi(argv[2]) : 0);
  {
    phx_tools::Progress progress(items, "items", show_after);
    for (size_t i = 0; i < items; ++i) {
      progress.update(i, "item " + std::to_string(i));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    progress.update(items);
  }
  std::printf("done\n");
  return 0;
}
