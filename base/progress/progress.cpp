#include "phx/progress.h"

#include <errno.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>

#include "phx/env.h"

namespace phx {

namespace {

constexpr std::chrono::milliseconds kShowAfter = std::chrono::seconds(2);
constexpr std::chrono::milliseconds kRedrawEvery = std::chrono::milliseconds(100);

// The Progress whose line is on the terminal, if any: the others of this copy of the code
// wait until it clears, so that two threads never draw over each other.
std::mutex line_mutex;
const Progress* line_owner = nullptr;

// PHX_PROGRESS_AFTER_MS=N: show_after for tests, which cannot wait two seconds on a model
// small enough to import at once.
std::chrono::milliseconds show_after_from_environment() {
  const char* text = env_value("PHX_PROGRESS_AFTER_MS");
  if (text == nullptr || *text == '\0') return kShowAfter;
  char* end = nullptr;
  const long ms = std::strtol(text, &end, 10);
  return *end == '\0' && ms >= 0 ? std::chrono::milliseconds(ms) : kShowAfter;
}

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

// "12/300 nodes  4.1/s" or "1.2/3.4 GB of weights  85.0 MB/s": bytes in the unit that
// suits the total, the rate in the same one.
std::string count_text(size_t done, size_t total, const std::string& unit, Amount amount,
                       double rate) {
  char text[128];
  if (amount == Amount::items) {
    std::snprintf(text, sizeof text, "%zu/%zu %s  %.1f/s", done, total, unit.c_str(), rate);
    return text;
  }
  static const struct {
    double size;
    const char* name;
  } scales[] = {{1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}, {1, "B"}};
  size_t s = 0;
  while (s + 1 < std::size(scales) && static_cast<double>(total) < scales[s].size) ++s;
  const double scale = scales[s].size;
  std::snprintf(text, sizeof text, "%.1f/%.1f %s %s  %.1f %s/s", static_cast<double>(done) / scale,
                static_cast<double>(total) / scale, scales[s].name, unit.c_str(), rate / scale,
                scales[s].name);
  return text;
}

// One write(2) per line: stderr's stdio lock does not reach the copies of this code in
// other libraries, and a single write keeps their lines whole.
void write_line(const std::string& text) {
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = write(STDERR_FILENO, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a closed terminal: the line is lost, the work is not
    written += static_cast<size_t>(n);
  }
}

}  // namespace

bool progress_wanted() {
  const char* progress = env_value("PHX_PROGRESS");
  const char* log_level = env_value("PHX_LOG_LEVEL");
  return isatty(STDERR_FILENO) != 0 && env_value("CI") == nullptr &&
         !(progress != nullptr && std::strcmp(progress, "0") == 0) &&
         !(log_level != nullptr && std::strcmp(log_level, "off") == 0);
}

void erase_progress_line() {
  std::lock_guard<std::mutex> lock(line_mutex);
  if (line_owner == nullptr) return;
  write_line("\r\033[K");
  line_owner = nullptr;  // the owner's next draw takes the line again
}

Progress::Progress(size_t total, std::string unit, Amount amount)
    : enabled_(progress_wanted()),
      show_after_(show_after_from_environment()),
      start_(Clock::now()),
      stage_start_(start_),
      total_(total),
      unit_(std::move(unit)),
      amount_(amount) {}

Progress::~Progress() { clear(); }

void Progress::update(size_t done, std::string_view current) {
  if (!enabled_) return;
  const auto now = Clock::now();
  if (now - start_ < show_after_) return;
  if (now - last_draw_ < kRedrawEvery && done < total_) return;
  last_draw_ = now;
  draw(done, current);
}

void Progress::next_stage(size_t total, std::string unit, Amount amount) {
  total_ = total;
  unit_ = std::move(unit);
  amount_ = amount;
  stage_start_ = Clock::now();
  last_draw_ = {};
}

void Progress::draw(size_t done, std::string_view current) {
  const double elapsed = std::chrono::duration<double>(Clock::now() - stage_start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  const size_t left = total_ > done ? total_ - done : 0;
  std::string line = count_text(done, total_, unit_, amount_, rate) + "  " +
                     (rate > 0 ? clock_text(static_cast<double>(left) / rate) : "?") + " left  " +
                     std::string(current);
  const size_t columns = terminal_columns();
  if (line.size() >= columns) line.resize(columns - 1);
  std::lock_guard<std::mutex> lock(line_mutex);
  if (line_owner == nullptr) line_owner = this;
  if (line_owner != this) return;
  // \033[K erases what a longer line before left to the right.
  write_line("\r" + line + "\033[K");
}

void Progress::clear() {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(line_mutex);
  if (line_owner != this) return;
  write_line("\r\033[K");
  line_owner = nullptr;
}

}  // namespace phx
