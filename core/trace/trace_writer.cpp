#include "trace_writer.h"

#include <fcntl.h>
#include <phx/error.h>
#include <phynexus/phynexus.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <thread>
#include <type_traits>
#include <variant>

namespace phx::trace {
namespace {

// Track numbers: device i is process i + 1, the host the process after the last device
// (pid 0 is the idle task to Perfetto). The devices come first because a viewer opens on
// the first track: speedscope makes a profile per (pid, tid) with spans, sorts them by
// pid then tid as numbers, sort indices ignored, and shows the first; Perfetto orders
// processes by process_sort_index, written equal to the pid. Stream n draws on thread 2n
// of its device, its simulated time on 2n + 1.
uint32_t device_pid(uint32_t device) { return device + 1; }

constexpr size_t kFlushBytes = 32 * 1024;
constexpr uint64_t kFlushIntervalNs = 100'000'000;
// The writer's thread formats the queue this often, or at once when it is this long; a
// thread that finds it longer still formats it itself, which bounds its memory (a forked
// child, which has no such thread, among them).
constexpr auto kFormatInterval = std::chrono::milliseconds(10);
constexpr size_t kWakeAtQueued = 4096;
constexpr size_t kMaxQueued = 16384;
// The metric in which a simulated device reports the time its model gives an op.
constexpr const char* kSimulatedTimeMetric = "estimated_time_ns";

// The calling thread's number on the host track, given on its first event.
uint32_t host_tid() {
  static std::atomic<uint32_t> next{1};
  thread_local const uint32_t tid = next.fetch_add(1, std::memory_order_relaxed);
  return tid;
}

// A JSON string. The runs between characters that need escaping are appended whole: the
// writer's thread formats every op's event, and it must keep up with the ops.
void append_string(std::string& out, std::string_view text) {
  out += '"';
  size_t run = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20) continue;
    out.append(text.substr(run, i - run));
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[(c >> 4) & 0xf];
      out += kHex[c & 0xf];
    }
    run = i + 1;
  }
  out.append(text.substr(run));
  out += '"';
}

void append_number(std::string& out, uint64_t value) {
  char text[24];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  out.append(text, end);
}

void append_number(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";  // JSON has no infinity nor NaN
    return;
  }
  // Most metrics are counts (cycles, bytes, nanoseconds): integers print several times
  // faster than the shortest form of a double, which an op pays for while tracing.
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (value >= 0 && value < kExactIntegers && value == std::floor(value)) {
    append_number(out, static_cast<uint64_t>(value));
    return;
  }
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  out.append(text, end);
}

// Microseconds, the format's unit, with the nanoseconds as three decimals (or any number
// of thousandths as the number with three decimals).
void append_microseconds(std::string& out, uint64_t ns) {
  append_number(out, ns / 1000);
  const uint64_t rest = ns % 1000;
  out += '.';
  out += char('0' + rest / 100);
  out += char('0' + rest / 10 % 10);
  out += char('0' + rest % 10);
}

// ,"key":
void append_key(std::string& out, const char* key) {
  out += ",\"";
  out += key;
  out += "\":";
}

std::string expand_pid(const std::string& path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 1 < path.size() && path[i + 1] == 'p') {
      out += std::to_string(::getpid());
      ++i;
    } else {
      out += path[i];
    }
  }
  return out;
}

double metric(const OpRecord& record, const char* name, double absent) {
  const size_t count = std::min<size_t>(record.plugin.metric_count, PHX_PLUGIN_MAX_METRICS);
  for (size_t i = 0; i < count; ++i)
    if (record.plugin.metrics[i].name != nullptr &&
        std::strcmp(record.plugin.metrics[i].name, name) == 0)
      return record.plugin.metrics[i].value;
  return absent;
}

// The writers with a trace open, ended at a normal exit so that their files are complete
// even when the program never destroyed its context.
class OpenWriters {
 public:
  static OpenWriters& get() {
    static OpenWriters writers;
    return writers;
  }
  void add(Writer* writer) {
    std::lock_guard lock(mutex_);
    writers_.insert(writer);
  }
  void remove(Writer* writer) {
    std::lock_guard lock(mutex_);
    writers_.erase(writer);
  }
  ~OpenWriters() {
    std::unordered_set<Writer*> open;
    {
      std::lock_guard lock(mutex_);
      open.swap(writers_);
    }
    for (Writer* writer : open) {
      try {
        writer->end();
      } catch (const Error&) {
        // Ended by another thread meanwhile: nothing left to complete.
      }
    }
  }

 private:
  std::mutex mutex_;
  std::unordered_set<Writer*> writers_;
};

}  // namespace

struct Writer::QueuedOp {
  OpRecord record;
  uint32_t pid = 0;
  uint32_t stream_number = 0;
  bool simulated = false;  // drawn on the simulated track too, from simulated_start_ns
  uint64_t simulated_start_ns = 0;
  uint64_t simulated_ns = 0;
};

struct Writer::QueuedWait {
  uint32_t host_tid = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t device = 0;
  uint32_t stream_number = 0;
  uint64_t ticket = 0;
};

struct Writer::Queued : std::variant<QueuedOp, QueuedWait> {
  using variant::variant;
};

struct Writer::Queue {
  // What the ops' threads touch, on cache lines of its own: were the writer's thread to
  // write next to the mutex while it formats, every op would wait for the line.
  alignas(64) std::mutex mutex;  // what follows, up to formatting
  std::condition_variable wake;
  std::vector<Queued> events;
  bool stopping = false;
  std::thread thread;
  pid_t thread_process = 0;  // the process that started it (a forked child has none)
  // The events being formatted, under the writer's mutex_.
  alignas(64) std::vector<Queued> formatting;
};

uint64_t now_ns() noexcept {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

Writer::Writer(AppendSignature append_signature)
    : append_signature_(append_signature), queue_(std::make_unique<Queue>()) {}

Writer::~Writer() {
  if (!active()) return;
  try {
    end();
  } catch (const Error&) {
    // Ended meanwhile by the exit handler.
  }
}

void Writer::begin(const std::string& path, const std::vector<std::string>& device_names) {
  // Opened before the lock: OpenWriters is made once, before any writer may need it at exit.
  OpenWriters& open_writers = OpenWriters::get();
  std::lock_guard lifecycle(lifecycle_mutex_);
  std::lock_guard lock(mutex_);
  if (fd_ >= 0)
    throw Error(PHX_STATUS_INVALID_ARGUMENT,
                "a trace is already being written to '" + path_ + "' (phx_trace_end it first)");
  const std::string expanded = expand_pid(path);
  const int fd = ::open(expanded.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(PHX_STATUS_INVALID_ARGUMENT,
                "cannot write the trace to '" + expanded + "': " + std::strerror(errno));
  fd_ = fd;
  path_ = expanded;
  buffer_ = "[\n";
  first_event_ = true;
  named_tracks_.clear();
  origin_ns_ = now_ns();
  last_flush_ns_ = origin_ns_;

  host_pid_ = static_cast<uint32_t>(device_names.size()) + 1;
  const std::string host = "host (pid " + std::to_string(::getpid()) + ")";
  auto process = [&](uint32_t pid, const std::string& name) {
    open_event("process_name", "__metadata", 'M', pid, 0, origin_ns_);
    buffer_ += ",\"args\":{\"name\":";
    append_string(buffer_, name);
    buffer_ += "}}";
    open_event("process_sort_index", "__metadata", 'M', pid, 0, origin_ns_);
    buffer_ += ",\"args\":{\"sort_index\":";
    append_number(buffer_, uint64_t{pid});
    buffer_ += "}}";
  };
  process(host_pid_, host);
  for (size_t i = 0; i < device_names.size(); ++i)
    process(device_pid(static_cast<uint32_t>(i)), device_names[i]);
  flush(origin_ns_, true);
  {
    std::lock_guard queue_lock(queue_->mutex);
    queue_->events.clear();  // a late op of the last trace
    queue_->stopping = false;
    queue_->thread = std::thread([this] { format_in_background(); });
    queue_->thread_process = ::getpid();
  }
  open_writers.add(this);
  active_.store(true, std::memory_order_relaxed);
}

void Writer::end() {
  std::lock_guard lifecycle(lifecycle_mutex_);
  std::thread thread;
  {
    std::lock_guard lock(mutex_);
    if (fd_ < 0) throw Error(PHX_STATUS_INVALID_ARGUMENT, "no trace is being written");
    active_.store(false, std::memory_order_relaxed);
    OpenWriters::get().remove(this);
    write_queued();
    buffer_ += "\n]\n";
    flush(now_ns(), true);
    close_file();
    std::lock_guard queue_lock(queue_->mutex);
    queue_->stopping = true;
    thread = std::move(queue_->thread);
  }
  queue_->wake.notify_one();
  if (!thread.joinable()) return;
  if (queue_->thread_process == ::getpid()) {
    thread.join();
  } else {
    // A forked child holds the handle of a thread it does not have: joining it would wait
    // forever, and destroying a joinable handle terminates. It is left as it is.
    new std::thread(std::move(thread));
  }
}

template <class Event>
void Writer::enqueue(Event&& event) {
  size_t queued = 0;
  {
    std::lock_guard lock(queue_->mutex);
    queue_->events.emplace_back(std::in_place_type<std::remove_cvref_t<Event>>,
                                std::forward<Event>(event));
    queued = queue_->events.size();
  }
  if (queued == kWakeAtQueued) queue_->wake.notify_one();
  if (queued >= kMaxQueued) {
    std::lock_guard lock(mutex_);
    if (fd_ >= 0) write_queued();
  }
}

void Writer::write_queued() {
  std::vector<Queued>& events = queue_->formatting;
  {
    // The queue takes the emptied vector back: its capacity saves the next ops a regrowth.
    std::lock_guard lock(queue_->mutex);
    events.swap(queue_->events);
  }
  for (const Queued& event : events) {
    if (const auto* op = std::get_if<QueuedOp>(&event))
      write_op(*op);
    else
      write_wait(std::get<QueuedWait>(event));
  }
  events.clear();
}

void Writer::format_in_background() {
  std::unique_lock queue_lock(queue_->mutex);
  while (!queue_->stopping) {
    queue_->wake.wait_for(queue_lock, kFormatInterval);
    if (queue_->events.empty()) continue;
    queue_lock.unlock();
    {
      std::lock_guard lock(mutex_);  // before the queue's, as everywhere
      if (fd_ >= 0) {
        write_queued();
        flush(now_ns(), false);
      }
    }
    queue_lock.lock();
  }
}

void Writer::close_file() {
  ::close(fd_);
  fd_ = -1;
  buffer_.clear();
  buffer_.shrink_to_fit();
}

void Writer::flush(uint64_t now, bool force) {
  if (!force && buffer_.size() < kFlushBytes && now - last_flush_ns_ < kFlushIntervalNs) return;
  last_flush_ns_ = now;
  size_t written = 0;
  while (written < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + written, buffer_.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // a full disk: the trace ends short, the program goes on
    written += static_cast<size_t>(n);
  }
  buffer_.clear();
}

void Writer::open_event(const char* name, const char* category, char phase, uint32_t pid,
                        uint32_t tid, uint64_t ts_ns) {
  buffer_ += first_event_ ? "{\"name\":" : ",\n{\"name\":";
  first_event_ = false;
  append_string(buffer_, name);
  buffer_ += ",\"cat\":\"";
  buffer_ += category;
  buffer_ += "\",\"ph\":\"";
  buffer_ += phase;
  buffer_ += '"';
  append_key(buffer_, "pid");
  append_number(buffer_, uint64_t{pid});
  append_key(buffer_, "tid");
  append_number(buffer_, uint64_t{tid});
  append_key(buffer_, "ts");
  append_microseconds(buffer_, ts_ns - origin_ns_);
}

bool Writer::track_is_new(uint32_t pid, uint32_t tid) {
  return named_tracks_.insert(uint64_t{pid} << 32 | tid).second;
}

void Writer::name_track(uint32_t pid, uint32_t tid, const std::string& name) {
  open_event("thread_name", "__metadata", 'M', pid, tid, origin_ns_);
  buffer_ += ",\"args\":{\"name\":";
  append_string(buffer_, name);
  buffer_ += "}}";
  // Tracks in tid order (a stream above its simulated time) where the viewer honours it:
  // Perfetto would otherwise put first the thread whose tid equals its process's pid.
  open_event("thread_sort_index", "__metadata", 'M', pid, tid, origin_ns_);
  buffer_ += ",\"args\":{\"sort_index\":";
  append_number(buffer_, uint64_t{tid});
  buffer_ += "}}";
}

void Writer::stream_track(uint32_t pid, uint32_t stream_number, bool simulated) {
  const uint32_t tid = 2 * stream_number + (simulated ? 1 : 0);
  if (track_is_new(pid, tid))
    name_track(
        pid, tid,
        "stream " + std::to_string(stream_number) + (simulated ? " (simulated device time)" : ""));
}

void Writer::host_event(uint32_t tid, const char* name, uint64_t start_ns, uint64_t end_ns) {
  if (track_is_new(host_pid_, tid))
    name_track(host_pid_, tid, "API calls, thread " + std::to_string(tid));
  open_event(name, "host", 'X', host_pid_, tid, start_ns);
  append_key(buffer_, "dur");
  append_microseconds(buffer_, end_ns - start_ns);
}

void Writer::op(StreamTrack stream, OpRecord&& record, uint64_t& simulated_end_ns) {
  QueuedOp op{std::move(record), device_pid(stream.device), stream.stream};
  const double simulated = metric(op.record, kSimulatedTimeMetric, -1);
  if (simulated >= 0) {
    // The device's own timeline: an op starts when submitted or when the one before it
    // ends on the modelled device, whichever is later.
    op.simulated = true;
    op.simulated_start_ns = std::max(op.record.start_ns, simulated_end_ns);
    op.simulated_ns = static_cast<uint64_t>(std::llround(simulated));
    simulated_end_ns = op.simulated_start_ns + op.simulated_ns;
  }
  enqueue(std::move(op));
}

void Writer::write_op(const QueuedOp& op) {
  const OpRecord& record = op.record;
  if (record.start_ns < origin_ns_) return;  // begun before the trace
  const char* name = record.collective != nullptr ? record.collective : phx_op_name(record.op);
  const uint32_t pid = op.pid;
  const bool fallback = metric(record, "fallback_to_cpu", 0) != 0;
  auto args = [&](uint64_t duration_ns) {
    buffer_ += ",\"args\":{\"op\":";
    append_string(buffer_, name);
    append_key(buffer_, "signature");
    if (record.signature.empty()) {
      // Written from the shapes: dtype names, digits and punctuation, nothing to escape.
      buffer_ += '"';
      append_signature_(buffer_, record);
      buffer_ += '"';
    } else {
      append_string(buffer_, record.signature);
    }
    if (!record.node.empty()) {
      append_key(buffer_, "node");
      append_string(buffer_, record.node);
    }
    append_key(buffer_, "ticket");
    append_number(buffer_, record.ticket);
    append_key(buffer_, "flops");
    append_number(buffer_, record.flops);
    append_key(buffer_, "bytes");
    append_number(buffer_, record.bytes);
    // FLOPs per nanosecond are GFLOP/s; to a thousandth, printed as fast as an integer.
    append_key(buffer_, "gflops_per_s");
    const double thousandths = duration_ns > 0 ? 1000 * record.flops / double(duration_ns) : 0;
    append_microseconds(buffer_, static_cast<uint64_t>(std::llround(thousandths)));
    append_key(buffer_, "cpu_fallback");
    buffer_ += fallback ? "true" : "false";
    const size_t count = std::min<size_t>(record.plugin.metric_count, PHX_PLUGIN_MAX_METRICS);
    for (size_t i = 0; i < count; ++i) {
      if (record.plugin.metrics[i].name == nullptr) continue;
      buffer_ += ',';
      append_string(buffer_, record.plugin.metrics[i].name);
      buffer_ += ':';
      append_number(buffer_, record.plugin.metrics[i].value);
    }
    buffer_ += "}}";
  };

  const uint32_t tid = 2 * op.stream_number;
  stream_track(pid, op.stream_number, false);
  pipeline_compile(record, pid, tid);
  open_event(name, "op", 'X', pid, tid, record.start_ns);
  append_key(buffer_, "dur");
  append_microseconds(buffer_, record.host_time_ns);
  args(record.host_time_ns);
  if (op.simulated) {
    stream_track(pid, op.stream_number, true);
    compile_cache_lookup(record, pid, tid + 1, op.simulated_start_ns);
    open_event(name, "simulated op", 'X', pid, tid + 1, op.simulated_start_ns);
    append_key(buffer_, "dur");
    append_microseconds(buffer_, op.simulated_ns);
    args(op.simulated_ns);
  }
}

uint64_t Writer::new_flow_ids(uint64_t count) noexcept {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(count, std::memory_order_relaxed);
}

void Writer::flow(StreamTrack stream, const OpRecord& record, const FlowEnd& end) {
  std::lock_guard lock(mutex_);
  if (fd_ < 0 || record.start_ns < origin_ns_) return;
  write_queued();
  // Both ends bind to the span that encloses them, so each is drawn inside its record's:
  // just before its end, past a compile drawn at its start; a collective's departure just
  // after the release it marks, which comes before every rank's end.
  const uint64_t end_ns = record.start_ns + record.host_time_ns;
  uint64_t ts = end_ns - std::min<uint64_t>(record.host_time_ns, 1);
  if (end.leaves && end.departs_after_ns != 0)
    ts = std::min(std::max(record.start_ns, end.departs_after_ns) + 1, end_ns);
  open_event(end.name, "flow", end.leaves ? 's' : 'f', device_pid(stream.device), 2 * stream.stream,
             ts);
  append_key(buffer_, "id");
  append_number(buffer_, end.id);
  buffer_ += end.leaves ? "}" : ",\"bp\":\"e\"}";
}

void Writer::pipeline_compile(const OpRecord& record, uint32_t pid, uint32_t tid) {
  const double compile_ns = metric(record, "pipeline_compile_ns", 0);
  if (compile_ns <= 0) return;
  // The compile ran inside the submission: its span starts with the op's and ends within
  // it (and is written first, as spans are written in the order they end).
  const uint64_t duration =
      std::min(static_cast<uint64_t>(std::llround(compile_ns)), record.host_time_ns);
  open_event("pipeline compile", "compile", 'X', pid, tid, record.start_ns);
  append_key(buffer_, "dur");
  append_microseconds(buffer_, duration);
  buffer_ += ",\"args\":{\"pipelines\":";
  append_number(buffer_, metric(record, "pipelines_created", 0));
  append_key(buffer_, "cache_hits");
  append_number(buffer_, metric(record, "pipeline_cache_hits", 0));
  buffer_ += "}}";
}

void Writer::compile_cache_lookup(const OpRecord& record, uint32_t pid, uint32_t tid,
                                  uint64_t ts_ns) {
  const double hit = metric(record, "compile_cache_hit", -1);
  if (hit < 0) return;
  open_event(hit != 0 ? "compile cache hit" : "compile cache miss", "compile", 'i', pid, tid,
             ts_ns);
  buffer_ += ",\"s\":\"t\",\"args\":{\"compile_time_ns\":";
  append_number(buffer_, metric(record, "compile_time_ns", 0));
  buffer_ += "}}";
}

void Writer::executable_run(StreamTrack stream, const RunSpan& run) {
  std::lock_guard lock(mutex_);
  if (fd_ < 0 || run.start_ns < origin_ns_) return;
  write_queued();  // its nodes first
  stream_track(device_pid(stream.device), stream.stream, false);
  open_event("executable run", "executable", 'X', device_pid(stream.device), 2 * stream.stream,
             run.start_ns);
  append_key(buffer_, "dur");
  append_microseconds(buffer_, run.end_ns - run.start_ns);
  buffer_ += ",\"args\":{\"nodes\":";
  append_number(buffer_, uint64_t{run.node_count});
  append_key(buffer_, "run");
  append_number(buffer_, run.run_index);
  buffer_ += "}}";
  flush(run.end_ns, false);
}

void Writer::stream_wait(StreamTrack stream, uint64_t ticket, uint64_t start_ns) {
  const QueuedWait wait{host_tid(), start_ns, now_ns(), stream.device, stream.stream, ticket};
  if (ticket != UINT64_MAX) {
    enqueue(wait);
    return;
  }
  // A synchronize is where a program looks at its results: what came before is in the
  // file from then on.
  std::lock_guard lock(mutex_);
  if (fd_ < 0) return;
  write_queued();
  write_wait(wait);
  flush(wait.end_ns, true);
}

void Writer::write_wait(const QueuedWait& wait) {
  if (wait.start_ns < origin_ns_) return;
  const bool everything = wait.ticket == UINT64_MAX;
  host_event(wait.host_tid, everything ? "stream synchronize" : "stream wait", wait.start_ns,
             wait.end_ns);
  buffer_ += ",\"args\":{\"device\":";
  append_number(buffer_, uint64_t{wait.device});
  append_key(buffer_, "stream");
  append_number(buffer_, uint64_t{wait.stream_number});
  if (!everything) {
    append_key(buffer_, "ticket");
    append_number(buffer_, wait.ticket);
  }
  buffer_ += "}}";
}

void Writer::transfer(const char* name, uint32_t device, uint64_t bytes, uint64_t start_ns) {
  const uint64_t end = now_ns();
  std::lock_guard lock(mutex_);
  if (fd_ < 0 || start_ns < origin_ns_) return;
  write_queued();
  host_event(host_tid(), name, start_ns, end);
  buffer_ += ",\"args\":{\"device\":";
  append_number(buffer_, uint64_t{device});
  append_key(buffer_, "bytes");
  append_number(buffer_, bytes);
  buffer_ += "}}";
  flush(end, std::strcmp(name, "download") == 0);
}

void Writer::copy(uint32_t dst_device, uint32_t src_device, uint64_t bytes, uint64_t start_ns) {
  const uint64_t end = now_ns();
  std::lock_guard lock(mutex_);
  if (fd_ < 0 || start_ns < origin_ns_) return;
  write_queued();
  host_event(host_tid(), "copy", start_ns, end);
  buffer_ += ",\"args\":{\"src_device\":";
  append_number(buffer_, uint64_t{src_device});
  append_key(buffer_, "dst_device");
  append_number(buffer_, uint64_t{dst_device});
  append_key(buffer_, "bytes");
  append_number(buffer_, bytes);
  buffer_ += "}}";
  flush(end, false);
}

void Writer::graph_compile(size_t node_count, size_t device_count, uint64_t start_ns) {
  const uint64_t end = now_ns();
  std::lock_guard lock(mutex_);
  if (fd_ < 0 || start_ns < origin_ns_) return;
  write_queued();
  host_event(host_tid(), "graph compile", start_ns, end);
  buffer_ += ",\"args\":{\"nodes\":";
  append_number(buffer_, uint64_t{node_count});
  append_key(buffer_, "devices");
  append_number(buffer_, uint64_t{device_count});
  buffer_ += "}}";
  flush(end, false);
}

void Writer::memory(uint32_t device, uint64_t bytes_in_use) {
  std::lock_guard lock(mutex_);
  if (fd_ < 0) return;
  write_queued();
  // Taken under the lock: a counter's samples stay in time order whichever thread adds them.
  const uint64_t now = now_ns();
  open_event("memory", "memory", 'C', device_pid(device), 0, now);
  buffer_ += ",\"args\":{\"bytes_in_use\":";
  append_number(buffer_, bytes_in_use);
  buffer_ += "}}";
  flush(now, false);
}

}  // namespace phx::trace
