// phx_progress_demo ITEMS [THREADS [log]]: counts ITEMS items of 20 ms each through a
// Progress in each of THREADS threads (1 by default), then prints "done" on stdout; with
// "log", halfway it writes a message to stderr as the library's log does (erasing the line
// first). test_progress.py runs it on a pseudo-terminal, on a pipe and with CI or
// PHX_PROGRESS=0 set, to see when the line is drawn, with two threads, to see that their
// lines never mix, and with a message, to see it start on a clean line.
#include <phx/progress.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

void count_items(size_t items, const std::string& unit, bool log) {
  phx::Progress progress(items, unit);
  for (size_t i = 0; i < items; ++i) {
    if (log && i == items / 2) {
      phx::erase_progress_line();
      std::fputs("a log message\n", stderr);
    }
    progress.update(i, "item " + std::to_string(i));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  progress.update(items);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: phx_progress_demo ITEMS [THREADS [log]]\n");
    return 2;
  }
  const size_t items = std::strtoul(argv[1], nullptr, 10);
  const size_t thread_count = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1;
  const bool log = argc > 3 && std::string(argv[3]) == "log";
  std::vector<std::thread> threads;
  for (size_t t = 0; t < thread_count; ++t)
    threads.emplace_back(count_items, items, "items of thread " + std::to_string(t), log && t == 0);
  for (std::thread& thread : threads) thread.join();
  std::printf("done\n");
  return 0;
}
