// The trace writer: the one place that writes a context's trace (phx_trace_begin,
// PHX_TRACE) in the Chrome Trace Event Format, one function per event kind. Events are
// streamed to the file as a JSON array (docs/tracing.md): memory stays bounded, and a
// process killed mid-run leaves the array open, which the format allows. The events of
// every op (ops and the waits for them) are queued as they are and formatted by a thread
// of the writer's own, so that an op pays for a copy, not for its JSON; every other event
// is written in place, after what is queued, so that the file keeps the order of calls.
// A leaf of the core: it takes plain records (op_record.h, and the ids and numbers below)
// that the runtime builds, and knows none of the runtime's objects.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "op_record.h"

namespace phx::trace {

// The steady clock in nanoseconds: the time base of every event.
uint64_t now_ns() noexcept;

// Where a stream's events are drawn: its device's process, its own track there.
struct StreamTrack {
  uint32_t device = 0;  // the device's index in the context
  uint32_t stream = 0;  // the stream's number in the context's traces
};

// Appends a record's signature to out: its text, or the text of its operands' shapes.
using AppendSignature = void (*)(std::string& out, const OpRecord& record);

// An executable's run on one stream, drawn as a span around the nodes it submitted there.
struct RunSpan {
  uint64_t ticket = 0;  // the run's last ticket on the stream: written once it has finished
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  size_t node_count = 0;
  uint64_t run_index = 0;
};

// One end of a flow arrow: from the op an event was recorded after to the first op of a
// stream that waited for it, and from the rank of a collective that arrived last to each
// rank it released. A stream keeps its ends until the record they bind to is written,
// and writes them with it: both ends bind to the record's span.
struct FlowEnd {
  uint64_t id = 0;        // the arrow's, shared by its two ends (Writer::new_flow_ids)
  const char* name = "";  // "event", or the collective's name; static storage
  bool leaves = false;    // the arrow leaves this record's span, else it arrives there
  uint64_t ticket = 0;    // binds to the record of this ticket, or with after,
  bool after = false;     // to the first record of a later ticket
  // A departure just after this time (a collective's release), not at the span's end.
  uint64_t departs_after_ns = 0;
};

class Writer {
 public:
  // append_signature writes the signature of an op's event, on the writer's thread.
  explicit Writer(AppendSignature append_signature);
  ~Writer();  // ends a trace still open
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Whether a trace is being written: the one branch an op pays when tracing is off.
  bool active() const noexcept { return active_.load(std::memory_order_relaxed); }

  // Starts writing to path ("%p" there becomes the process id), truncating the file, and
  // names a process per device: device i of the context is device_names[i]. Throws
  // INVALID_ARGUMENT when a trace is already being written or the file cannot be opened
  // for writing.
  void begin(const std::string& path, const std::vector<std::string>& device_names);
  // Writes what is buffered, closes the array and the file. Throws INVALID_ARGUMENT when
  // no trace is being written.
  void end();

  // ---- One function per event kind (docs/tracing.md lists them) ----
  // An op that finished on stream: a complete event on the stream's track, and on its
  // simulated-time track when the plugin reported a modelled time (estimated_time_ns);
  // simulated_end_ns is the stream's simulated clock, which it advances. Queued.
  void op(StreamTrack stream, OpRecord&& record, uint64_t& simulated_end_ns);
  // An executable's run on stream, after its nodes there were written.
  void executable_run(StreamTrack stream, const RunSpan& run);
  // An end of a flow arrow, bound to record on stream's track.
  void flow(StreamTrack stream, const OpRecord& record, const FlowEnd& end);
  // count new flow ids, the first returned; never 0, never given twice in a process.
  static uint64_t new_flow_ids(uint64_t count) noexcept;
  // A blocking wait for stream's work (ticket UINT64_MAX: all of it) on the host track.
  // Queued, but for a synchronize, after which everything before is in the file.
  void stream_wait(StreamTrack stream, uint64_t ticket, uint64_t start_ns);
  // phx_tensor_upload ("upload") or _download ("download") of bytes of a tensor on device,
  // on the host track.
  void transfer(const char* name, uint32_t device, uint64_t bytes, uint64_t start_ns);
  // A copy of bytes between two tensors (phx_tensor_copy, an executable's copy step), from
  // one on src_device to one on dst_device.
  void copy(uint32_t dst_device, uint32_t src_device, uint64_t bytes, uint64_t start_ns);
  // phx_graph_compile of a graph of node_count nodes for device_count devices.
  void graph_compile(size_t node_count, size_t device_count, uint64_t start_ns);
  // The bytes live tensors hold on device now: a counter on the device's process.
  void memory(uint32_t device, uint64_t bytes_in_use);

 private:
  struct Queue;  // the queued events and the thread that formats them
  struct QueuedOp;
  struct QueuedWait;
  struct Queued;  // either

  // Puts event (a QueuedOp or a QueuedWait) into the queue, constructed in place.
  template <class Event>
  void enqueue(Event&& event);
  // Formats the queued events, in order. Under mutex_.
  void write_queued();
  // The writer's thread: formats the queue every few milliseconds, or once it is long.
  void format_in_background();
  void write_op(const QueuedOp& op);
  void write_wait(const QueuedWait& wait);
  // The event's opening up to its args.
  void open_event(const char* name, const char* category, char phase, uint32_t pid, uint32_t tid,
                  uint64_t ts_ns);
  bool track_is_new(uint32_t pid, uint32_t tid);  // true once per track and trace
  void name_track(uint32_t pid, uint32_t tid, const std::string& name);
  // A span on host thread tid's track.
  void host_event(uint32_t tid, const char* name, uint64_t start_ns, uint64_t end_ns);
  // The compile events an op's record carries, written with the op: the pipelines its
  // submission created (pipeline_compile_ns, pipelines_created, pipeline_cache_hits: the
  // Vulkan plugin), a span on its track; and the lookup in a simulated chip's compile cache
  // (compile_cache_hit, compile_time_ns: tpu-sim), an instant on its simulated track.
  void pipeline_compile(const OpRecord& record, uint32_t pid, uint32_t tid);
  void compile_cache_lookup(const OpRecord& record, uint32_t pid, uint32_t tid, uint64_t ts_ns);
  void stream_track(uint32_t pid, uint32_t stream_number, bool simulated);
  // Hands the buffer to the file when it is full, when force is set, or every 100 ms, so
  // that a killed process loses at most that much.
  void flush(uint64_t now, bool force);
  void close_file();

  const AppendSignature append_signature_;
  std::atomic<bool> active_{false};
  std::mutex lifecycle_mutex_;  // begin and end, which start and stop the thread
  std::unique_ptr<Queue> queue_;
  std::mutex mutex_;  // everything below; taken before the queue's
  int fd_ = -1;
  std::string path_;
  std::string buffer_;
  bool first_event_ = true;
  uint64_t origin_ns_ = 0;  // the steady clock at begin: ts 0
  uint32_t host_pid_ = 0;   // the process after the devices
  uint64_t last_flush_ns_ = 0;
  std::unordered_set<uint64_t> named_tracks_;
};

}  // namespace phx::trace
