#include "logging.h"

#include <phx/progress.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cstring>
#include <mutex>

namespace phx {
namespace {

phx_log_level from_spdlog(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
      return PHX_LOG_TRACE;
    case spdlog::level::debug:
      return PHX_LOG_DEBUG;
    case spdlog::level::info:
      return PHX_LOG_INFO;
    case spdlog::level::warn:
      return PHX_LOG_WARN;
    default:
      return PHX_LOG_ERROR;
  }
}

// Hands each formatted message to the user's callback.
class CallbackSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  CallbackSink(phx_log_callback callback, void* user_data)
      : callback_(callback), user_data_(user_data) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string text(msg.payload.data(), msg.payload.size());
    callback_(user_data_, from_spdlog(msg.level), text.c_str());
  }
  void flush_() override {}

 private:
  phx_log_callback callback_;
  void* user_data_;
};

// stderr, where a progress line (phx/progress.h) may be drawn: it is erased first, so that
// a message never lands after the line's text.
class StderrSink : public spdlog::sinks::stderr_sink_mt {
 public:
  void log(const spdlog::details::log_msg& msg) override {
    erase_progress_line();
    spdlog::sinks::stderr_sink_mt::log(msg);
  }
};

}  // namespace

phx_log_level parse_log_level(const char* text, phx_log_level fallback) {
  if (text == nullptr) return fallback;
  static const struct {
    const char* name;
    phx_log_level level;
  } names[] = {{"trace", PHX_LOG_TRACE}, {"debug", PHX_LOG_DEBUG}, {"info", PHX_LOG_INFO},
               {"warn", PHX_LOG_WARN},   {"error", PHX_LOG_ERROR}, {"off", PHX_LOG_OFF}};
  for (const auto& n : names)
    if (std::strcmp(text, n.name) == 0) return n.level;
  return fallback;
}

std::shared_ptr<spdlog::logger> make_logger(phx_log_level level, phx_log_callback callback,
                                            void* user_data) {
  spdlog::sink_ptr sink;
  if (callback != nullptr) {
    sink = std::make_shared<CallbackSink>(callback, user_data);
  } else {
    sink = std::make_shared<StderrSink>();
    sink->set_pattern("[phynexus %l] %v");
  }
  auto logger = std::make_shared<spdlog::logger>("phynexus", std::move(sink));
  logger->set_level(to_spdlog(level));
  return logger;
}

}  // namespace phx
