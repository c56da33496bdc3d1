// The objects behind the C API's handles: a context owns its plugins, their devices,
// and every tensor and stream created in it.
#pragma once

#include <phynexus/plugin.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "errors.h"
#include "handles.h"
#include "loaded_plugin.h"
#include "trace_writer.h"

namespace phx {

class Context;
struct CalibratorObject;
struct Stream;

// An object of a layer above the runtime (a graph, an executable) that a context owns,
// so that the context's destruction frees those the program forgot, before its streams
// and tensors, which such an object may use. Its destructor removes its handle from its
// layer's table.
struct ContextObject {
  virtual ~ContextObject() = default;
  Context* context = nullptr;
  uintptr_t handle = 0;
};

struct Device {
  Plugin* plugin = nullptr;
  uint32_t local_index = 0;  // the device's index within its plugin
  uint32_t index = 0;        // the device's index within the context
  phx_device_type type = PHX_DEVICE_CPU;
  std::string name, vendor;
  uint64_t memory_total_bytes = 0, memory_available_bytes = 0;
  uint32_t compute_units = 0;
  uint32_t dtype_mask = 0;
  std::deque<std::string> property_text;  // owns the strings properties point to
  std::vector<phx_property> properties;
  bool supported[PHX_OP_COUNT][PHX_DTYPE_COUNT] = {};

  // The device's live streams, waited on before host transfers.
  std::mutex streams_mutex;
  std::vector<Stream*> streams;
  void wait_for_streams();

  // Ops of this device that ran on the CPU device instead (PHX_CONTEXT_FALLBACK_CPU), and
  // the (op, dtype) pairs already logged, so that each is logged once.
  std::atomic<uint64_t> fallback_ops{0};
  std::mutex fallback_log_mutex;
  bool fallback_logged[PHX_OP_COUNT][PHX_DTYPE_COUNT] = {};
};

struct Tensor {
  Context* context = nullptr;
  Device* device = nullptr;
  uintptr_t handle = 0;
  phx_dtype dtype = PHX_DTYPE_INVALID;
  uint32_t rank = 0;
  int64_t shape[PHX_MAX_RANK] = {};
  uint64_t element_count = 0;
  uint64_t byte_size = 0;
  void* buffer = nullptr;
  uint64_t offset = 0;  // of the first element in buffer: non-zero for a range of an
                        // executable's planned block, which has no handle of its own
  // The plugin ABI promises buffer_read for distinct buffers only, while the C API lets
  // ops on several streams read one tensor at once: reads the host makes of a tensor on
  // its own (the CPU fallback's copies, calibration) take this lock.
  mutable std::mutex host_read_mutex;
  // For a tensor over the consumer's memory (phx_tensor_create_from_host): what to call
  // once the device no longer uses it; null otherwise.
  phx_host_release_fn release = nullptr;
  void* release_data = nullptr;

  phx_plugin_tensor plugin_view() const;
};

// The consumer's memory a tensor is made over (phx_tensor_create_from_host).
struct HostMemory {
  void* data;
  phx_host_release_fn release;
  void* user_data;
};

// The dtypes and shapes of an op's operands, as its submission found them. A record keeps
// these rather than its signature's text, which is written only when it is read (the
// profile API, the trace's writer thread): a traced op pays for a copy, not for the text.
struct OperandShapes {
  static constexpr size_t kMaxOperands = PHX_MAX_OP_INPUTS + PHX_MAX_OP_OUTPUTS;
  static constexpr size_t kMaxDims = 24;  // in all; an op with more keeps its text instead
  uint8_t input_count = 0;
  uint8_t output_count = 0;
  uint8_t dtypes[kMaxOperands] = {};  // PHX_DTYPE_INVALID: an absent optional input
  uint8_t ranks[kMaxOperands] = {};
  int64_t dims[kMaxDims] = {};
};

// A record of one op: what phx_profile_get reports, and what a trace draws of it.
struct ProfileEntry {
  uint64_t ticket = 0;
  phx_op_id op = PHX_OP_INVALID;
  // "f32[64x32], f32[32x16] -> f32[64x16]": given as text (a collective's, an op with
  // more than OperandShapes::kMaxDims dimensions), or empty and written from shapes
  // (append_signature in op_rules.h).
  std::string signature;
  OperandShapes shapes;
  std::string node;                  // the graph node an executable ran it for; "" for phx_op_run
  const char* collective = nullptr;  // a collective's name (comm.h), whose op is INVALID
  uint64_t start_ns = 0;             // trace::now_ns() at submission
  uint64_t host_time_ns = 0;
  double flops = 0;             // op_figures.h
  uint64_t bytes = 0;           // of its inputs and outputs
  phx_plugin_profile plugin{};  // filled by the plugin until the op completes
};

// Work a stream's host holds back until what it waits for has happened (comm.h, "Held
// work"): another stream's event, an asynchronous transfer, a collective's other ranks.
struct HeldWork {
  enum class Kind {
    kSubmission,  // an op held behind other held work: handed to the plugin in turn
    kHostWork,    // run by the host once the plugin has finished the earlier work
    kWait,        // holds the later work until it returns; takes no ticket
  };
  Kind kind = Kind::kHostWork;
  uint64_t ticket = 0;
  // Given the work's ticket. A submission runs under the stream's lock, the others without.
  std::function<void(uint64_t ticket)> run;
};

// What outlives a stream for those that wait on it from elsewhere (events): the stream
// until its destruction, which first waits for its work.
struct StreamLink {
  std::mutex mutex;
  Stream* stream = nullptr;  // null once the stream is being destroyed

  // Whether the stream's work up to ticket has finished; never blocks on it.
  bool finished(uint64_t ticket);
};

struct Stream {
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();  // stops the worker; the caller has waited for the stream's work

  Context* context = nullptr;
  Device* device = nullptr;
  uintptr_t handle = 0;
  void* plugin_stream = nullptr;
  // The last ticket the stream gave out, whichever path ran the op. The plugin numbers
  // only the ops it ran: an op the CPU fallback ran takes a ticket of the host's own.
  // The fallback drains the device before it runs, so every ticket up to its own has
  // finished (drained_through), and the plugin's ticket of a later op is the stream's
  // minus ticket_offset (the fallback ops so far). Changed under mutex.
  // With held work, the stream gives out tickets before the plugin has seen their work:
  // submitted is the last ticket handed to the plugin or finished by the host.
  uint64_t last_ticket = 0;
  uint64_t submitted = 0;
  uint64_t drained_through = 0;
  uint64_t ticket_offset = 0;
  std::mutex mutex;  // serializes the plugin's calls on this stream, guards records and held
  bool profiling = false;
  bool internal = false;  // the runtime's own (the CPU fallback's): traces leave it out
  // The ops' records, for the profile API when profiling, and until their trace events
  // are written when tracing: then the first `traced` of them are written (and, without
  // profiling, dropped). A deque: entries stay put while the plugin fills them.
  std::deque<ProfileEntry> records;
  size_t traced = 0;
  std::deque<trace::RunSpan> run_spans;  // executable runs whose events wait for their ops
  uint32_t trace_id = 0;                 // the stream's number in its context's traces
  uint64_t simulated_end_ns = 0;         // where the modelled device's timeline has got to
  std::shared_ptr<StreamLink> link = std::make_shared<StreamLink>();

  // Throws INVALID_ARGUMENT for a ticket the stream has not given out (0 included).
  void check_issued(uint64_t ticket) const;
  void wait(uint64_t ticket);  // UINT64_MAX: everything
  uint64_t completed();        // the highest finished ticket

  // Queues run as host work (HeldWork::kHostWork) and returns its ticket.
  uint64_t hold_host_work(std::function<void(uint64_t ticket)> run);
  // Holds the stream's later work until wait returns (HeldWork::kWait).
  void hold_until(std::function<void()> wait);
  // Waits until the stream holds nothing back: for the calls that cannot be held.
  void release_held();

  // Gives out the ticket of an op the host ran to its end itself, after the stream's
  // earlier work had finished (the CPU fallback).
  uint64_t issue_finished_ticket();
  // Whether a submission now keeps a record: profiling, or a trace being written.
  bool keeps_records() const;
  // Keeps the record of an op that has finished (the CPU fallback's).
  void add_finished_record(ProfileEntry&& record);
  // Adds the trace's span of an executable's run, written once its ticket has finished.
  void add_run_span(const trace::RunSpan& run);
  // Keeps an end of a trace's flow arrow until the record it binds to is written (an end
  // with `after` binds to the first op queued from now on). False, keeping nothing, when
  // that record has been written already.
  bool add_flow(trace::FlowEnd end);
  // Drops the records (phx_profile_clear); the caller has waited for the stream.
  void clear_records();

  // Hands a checked op to the plugin and returns its ticket; keeps a profile record
  // when profiling, naming node (a graph node's name, or null).
  uint64_t submit(phx_op_id op, const void* params, const Tensor* const* inputs, size_t input_count,
                  const Tensor* const* outputs, size_t output_count, const char* node = nullptr);

  // Hands a run of a plugin's executable (plugin ABI 1.3) to the plugin, with a tensor
  // per value of its graph, and returns its one ticket. When profiling it keeps a record
  // per node of the executable (node_count of them), which describe_node fills (op,
  // signature, node name) before the plugin fills the rest.
  uint64_t run_executable(void* executable, const phx_plugin_tensor* values, size_t value_count,
                          size_t node_count,
                          const std::function<void(size_t, ProfileEntry&)>& describe_node);

 private:
  // Calls the plugin (submit), which gives its ticket, under the stream's lock; checks
  // the ticket, gives it to records and returns the stream's.
  template <typename Submit>
  uint64_t take_ticket(const char* entry, std::span<ProfileEntry* const> records, Submit&& submit);
  template <typename Submit>
  uint64_t take_ticket_locked(const char* entry, std::span<ProfileEntry* const> records,
                              Submit&& submit);
  // Hands a checked op to the plugin, with a record to fill when entry is not null.
  uint64_t submit_locked(phx_plugin_op& call, ProfileEntry* entry);
  // Writes the trace events of the records and runs up to ticket done, which has
  // finished. Called under mutex.
  void write_finished(uint64_t done);
  // Writes the flow ends that bind to record, just written. Under mutex.
  void write_flows(const ProfileEntry& record);
  // Waits for ticket, held work included, and returns held work's first error.
  void wait_locked(std::unique_lock<std::mutex>& lock, uint64_t ticket);
  // Waits for the plugin's work up to ticket (submitted already) and writes its trace.
  void wait_plugin_locked(uint64_t ticket);
  // Queues work behind the held work, starting the worker on first use. Under mutex.
  void hold_locked(HeldWork work);
  // The worker: hands on the held work in order until the stream is destroyed.
  void run_held();
  // Counts ticket as finished by the host: every earlier ticket has finished too (the
  // plugin's work was drained first). Under mutex.
  void finish_on_host(uint64_t ticket);

  std::vector<trace::FlowEnd> flows_;  // under mutex
  uint64_t written_through_ = 0;       // the ticket of the last record written to a trace
  std::deque<HeldWork> held_;
  std::condition_variable held_changed_;  // a held item finished, or one was queued
  std::thread worker_;
  bool stopping_ = false;
  // The first error of held work, returned by the next wait.
  std::optional<std::pair<phx_status, std::string>> held_error_;
};

class Context {
 public:
  explicit Context(const phx_context_options& options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  uintptr_t handle = 0;
  std::shared_ptr<spdlog::logger> logger;
  bool profiling = false;
  trace::Writer tracer;  // phx_trace_begin, PHX_TRACE
  std::atomic<uint32_t> streams_created{0};
  std::vector<std::unique_ptr<Plugin>> plugins;  // every candidate, in search order
  std::vector<std::unique_ptr<Device>> devices;
  // Where unsupported ops run with PHX_CONTEXT_FALLBACK_CPU: the first CPU device; null
  // without the flag or without such a device.
  Device* fallback_device = nullptr;

  Device& device(size_t index);  // NOT_FOUND past the end

  // Counts the calling thread's running C API call as a user of the context until the
  // call returns (CallScope in errors.h), once however many of its handles the call
  // looks up; destroy_context waits for every such call. INVALID_ARGUMENT once
  // destruction has begun. The caller guarantees the context is alive meanwhile: it
  // holds the lock of a handle table that still lists the context or one of its objects.
  void retain_for_call();
  // Ends one retain_for_call. The context may be freed the moment it returns.
  void release_call() noexcept;

  // A tensor in memory the device allocates, or, given host, over the consumer's memory:
  // then, on success only, the tensor calls host->release when destroyed.
  Tensor& create_tensor(Device& device, phx_dtype dtype, size_t rank, const int64_t* shape,
                        const HostMemory* host = nullptr);
  void destroy_tensor(Tensor& tensor);
  Stream& create_stream(Device& device);
  void destroy_stream(Stream& stream);

 private:
  void add_devices(Plugin& plugin);
  // Adds device's bytes in use to the trace being written.
  void trace_memory(Device& device) noexcept;
  // Frees tensor and returns its host memory's release, which the caller calls (or
  // nothing to call, when release is null) once no lock is held.
  std::pair<phx_host_release_fn, void*> free_tensor(Tensor& tensor);

  friend void destroy_context(Context& context);
  // The calls that retained the context (the low bits) and, in the top bit, whether its
  // destruction has begun: one word, so that a release learns whether to wake the
  // destroyer in the same operation after which it may no longer touch the context.
  static constexpr uint32_t kDestroying = UINT32_C(1) << 31;
  std::atomic<uint32_t> call_state_{0};

  std::mutex objects_mutex_;
  std::unordered_set<Tensor*> tensors_;
  std::unordered_set<Stream*> streams_;

 public:
  // Calibrators are host objects; the context owns them so that its destruction frees
  // those the program forgot.
  CalibratorObject& create_calibrator(const phx_calibration_options& options);
  void destroy_calibrator(CalibratorObject& calibrator);

 private:
  std::unordered_set<CalibratorObject*> calibrators_;

 public:
  // Takes ownership of object (its context set to this one).
  void adopt(std::unique_ptr<ContextObject> object);
  // Destroys an object adopt took.
  void destroy_object(ContextObject& object);

 private:
  std::unordered_set<ContextObject*> objects_;
};

// The live object of handle in a table of a layer above the runtime, with its context
// retained for the running call, as lookup does. Throws INVALID_ARGUMENT for a null,
// stale or made-up handle, naming what.
template <typename Object, typename Table>
Object& lookup_object(Table& table, const void* handle, const char* what) {
  if (handle == nullptr) fail(PHX_STATUS_INVALID_ARGUMENT, std::string(what) + " is null");
  Object* object = table.find(reinterpret_cast<uintptr_t>(handle),
                              [](Object& found) { found.context->retain_for_call(); });
  if (object == nullptr)
    fail(PHX_STATUS_INVALID_ARGUMENT, std::string(what) + " is not a live handle (destroyed?)");
  return *object;
}

// Registers the handle of an object of a layer above the runtime, then gives the object
// to its context; returns the handle. The object's destructor removes it from table.
template <typename Object, typename Table>
uintptr_t register_object(Context& context, std::unique_ptr<Object> object, Table& table,
                          const char* what) {
  object->context = &context;
  object->handle = table.add(object.get());
  if (object->handle == 0) fail(PHX_STATUS_OUT_OF_MEMORY, std::string("too many live ") + what);
  const uintptr_t handle = object->handle;
  context.adopt(std::move(object));
  return handle;
}

// phx_context_destroy: turns away the calls that begin from now on, waits for those
// that retained the context (the calling one's own retain aside), then frees the
// context with every object in it. INVALID_ARGUMENT when another thread has begun
// destroying it. The caller has retained the context (looked its handle up).
void destroy_context(Context& context);

// The process-wide handle tables, and lookups that throw INVALID_ARGUMENT for a null,
// stale or made-up handle, or for an object whose context is being destroyed. Each
// lookup retains the object's context for the running C API call (retain_for_call).
using ContextTable = HandleTable<Context, 0xc1>;
using TensorTable = HandleTable<Tensor, 0xc2>;
using StreamTable = HandleTable<Stream, 0xc3>;
using CalibratorTable = HandleTable<CalibratorObject, 0xc4>;
ContextTable& context_table();
TensorTable& tensor_table();
StreamTable& stream_table();
CalibratorTable& calibrator_table();
Context& lookup(phx_context handle);
Tensor& lookup(phx_tensor handle);
Stream& lookup(phx_stream handle);
CalibratorObject& lookup(phx_calibrator handle);

}  // namespace phx
