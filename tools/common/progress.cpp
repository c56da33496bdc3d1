#include "progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace phx_tools {

namespace {

// The terminal's width, so that the line never wraps (a wrapped line cannot be rewritten
// with \r); 80 when it cannot be asked.
size_t terminal_columns() {
  winsize size{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

// "1:10" (minutes and seconds) or "1:02:03".
std::string clock_text(double seconds) {
  const long total = static_cast<long>(seconds + 0.5);
  char text[32];
  if (total >= 3600)
    std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  else
    std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
  return text;
}

}  // namespace

bool progress_wanted() { return isatty(STDERR_FILENO) != 0 && std::getenv("CI") == nullptr; }

Progress::Progress(size_t total, std::string unit, std::chrono::milliseconds show_after)
    : enabled_(progress_wanted()),
      total_(total),
      unit_(std::move(unit)),
      show_after_(show_after),
      start_(Clock::now()) {}

Progress::~Progress() { clear(); }

void Progress::update(size_t done, std::string_view current) {
  done_ = done;
  current_ = current;
  if (!enabled_) return;
  const auto now = Clock::now();
  if (now - start_ < show_after_) return;
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100) && done_ < total_) return;
  last_draw_ = now;
  draw();
}

void Progress::draw() {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done_) / elapsed : 0;
  char figures[96];
  std::snprintf(figures, sizeof figures, "%zu/%zu %s  %.1f/s  %s left  ", done_, total_,
                unit_.c_str(), rate,
                rate > 0 ? clock_text(static_cast<double>(total_ - done_) / rate).c_str() : "?");
  std::string line = figures + current_;
  const size_t columns = terminal_columns();
  if (line.size() >= columns) line.resize(columns - 1);
  // \033[K erases what a longer line before left to the right.
  std::fprintf(stderr, "\r%s\033[K", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::clear() {
  if (!drawn_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace phx_tools
