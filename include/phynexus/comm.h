/*
 * Phynexus: many devices in one process (since API 0.3). Included by phynexus.h.
 *
 * Events order the streams of several devices without blocking the host; asynchronous
 * transfers overlap with compute; a communicator runs collectives (all-reduce,
 * all-gather, reduce-scatter, broadcast, send and receive) over a set of devices, each
 * ordered on its rank's stream like an op. docs/comm.md explains the model.
 *
 * Held work. A stream normally hands each op to its device at once. Work that must
 * wait for something the device cannot see (another stream's event, the other ranks of
 * a collective) is held by the host instead, and every later submission on that stream
 * is held behind it, in order; a thread of the stream's own hands each on when its turn
 * comes. Calls that queue work return at once either way, with a ticket. Calls that
 * cannot be held (an executable's run, an op the CPU fallback runs, blocking transfers)
 * first wait for the stream's held work. Errors of held work are returned by the next
 * phx_stream_wait or phx_stream_synchronize of its stream, as an asynchronous op's are.
 */
#ifndef PHYNEXUS_COMM_H
#define PHYNEXUS_COMM_H

#include "phynexus.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Events ------------------------------------------------------------------------ */

typedef struct phx_event_s* phx_event;

/* Creates an event that completes when the work of stream up to ticket has finished;
 * ticket 0 stands for the stream's last ticket (an event of a stream without work is
 * complete at once). The event outlives the stream: a destroyed stream's work has
 * finished. The caller owns *out_event and destroys it with phx_event_destroy.
 * Returns INVALID_ARGUMENT (null or stale stream, a ticket not yet issued),
 * OUT_OF_MEMORY. Externally synchronized: stream. */
PHX_API phx_status phx_event_record(phx_stream stream, uint64_t ticket, phx_event* out_event);

/* Destroys an event. Streams already told to wait for it still do. Returns
 * INVALID_ARGUMENT. Thread-safe. */
PHX_API phx_status phx_event_destroy(phx_event event);

/* Sets *out_done to 1 if the event has completed, else 0; never blocks.
 * Returns INVALID_ARGUMENT. Thread-safe. */
PHX_API phx_status phx_event_query(phx_event event, int* out_done);

/* Blocks the calling thread until the event has completed. It reports no error of the
 * work it waited for: that is its stream's (phx_stream_wait). Returns INVALID_ARGUMENT.
 * Thread-safe. */
PHX_API phx_status phx_event_synchronize(phx_event event);

/* Makes the work submitted to stream from now on wait for event, without blocking the
 * host; the event's stream may be on any device of the same context. A complete event
 * holds nothing back. Returns INVALID_ARGUMENT (another context's event).
 * Externally synchronized: stream. */
PHX_API phx_status phx_stream_wait_event(phx_stream stream, phx_event event);

/* ---- Asynchronous transfers ------------------------------------------------------------
 * Ordered on stream, a stream of the tensor's device, like an op: the transfer begins
 * after the stream's earlier work and before its later work, and its ticket, written to
 * *out_ticket (which may be null), finishes with it. The caller keeps the host memory
 * valid, and does not touch it (nor the tensor's range, from other streams) until the
 * ticket has finished. Work of other streams is ordered with events. Errors as the
 * blocking phx_tensor_upload and phx_tensor_download; the checks are made at the call.
 */
PHX_API phx_status phx_tensor_upload_async(phx_stream stream, phx_tensor tensor, size_t offset,
                                           const void* src, size_t size, uint64_t* out_ticket);
PHX_API phx_status phx_tensor_download_async(phx_stream stream, phx_tensor tensor, size_t offset,
                                             void* dst, size_t size, uint64_t* out_ticket);

/* Copies src into dst as phx_tensor_copy does (same dtype and byte size, any two devices
 * of the context), ordered on stream, a stream of dst's device or of src's. Work of the
 * other tensor's device is ordered with events. Errors as phx_tensor_copy. */
PHX_API phx_status phx_tensor_copy_async(phx_stream stream, phx_tensor dst, phx_tensor src,
                                         uint64_t* out_ticket);

/* ---- Communicators ---------------------------------------------------------------------
 * A communicator joins ranks 0..ranks-1, each on a device of the context (a device may
 * serve several ranks). Every collective is one call per rank, on a stream of that
 * rank's device: the k-th collective call of each rank forms collective k, which runs
 * when every rank's stream has reached it, and then each rank's ticket finishes.
 * Each call only queues its rank's part: a program calls every rank's part before it
 * waits for any of them (a single thread may drive every rank). Two ranks of one
 * collective must not use the same stream (the call is refused).
 * Ranks that disagree (another collective, dtype, size, op or root) fail the collective
 * on every rank with INVALID_ARGUMENT naming them; ranks missing for longer than the
 * communicator's timeout fail it with DEVICE_UNAVAILABLE. Both errors are returned by
 * each rank's next phx_stream_wait or phx_stream_synchronize.
 *
 * Results are deterministic. A reduction combines the ranks in rank order, 0 first, each
 * element alone: sums of f32, f16 and bf16 accumulate in f32 and round once to the
 * dtype; integer sums wrap around in the dtype (exact while no overflow); max and min
 * are exact, and a NaN in any rank gives NaN; mean is the f32 sum divided by ranks,
 * rounded once (floats only). Copies (gather, broadcast, send) are exact.
 */

typedef struct phx_comm_s* phx_comm;

typedef enum phx_reduce_op {
  PHX_REDUCE_SUM = 0,
  PHX_REDUCE_MAX = 1,
  PHX_REDUCE_MIN = 2,
  PHX_REDUCE_MEAN = 3 /* f32, f16, bf16 */
} phx_reduce_op;

typedef struct phx_comm_options {
  size_t struct_size;
  /* How long the ranks that reached a collective wait for the others before it fails,
   * in milliseconds; 0 takes the default, 60000. */
  uint32_t timeout_ms;
} phx_comm_options;

#define PHX_COMM_OPTIONS_INIT \
  { sizeof(phx_comm_options), 0 }

/* Creates a communicator of ranks ranks (>= 1), rank r on device devices[r]; options may
 * be null. The caller owns *out_comm and destroys it with phx_comm_destroy.
 * Returns INVALID_ARGUMENT, NOT_FOUND (no such device), OUT_OF_MEMORY. Thread-safe. */
PHX_API phx_status phx_comm_create(phx_context context, const size_t* devices, size_t ranks,
                                   const phx_comm_options* options, phx_comm* out_comm);

/* Destroys the communicator. Collectives it queued still complete or fail (a collective
 * missing ranks fails at once). Returns INVALID_ARGUMENT. Externally synchronized: comm. */
PHX_API phx_status phx_comm_destroy(phx_comm comm);

/* Sets *out_ranks to the number of ranks. Returns INVALID_ARGUMENT. Thread-safe. */
PHX_API phx_status phx_comm_ranks(phx_comm comm, size_t* out_ranks);

/* Each collective below is rank's part, queued on stream (of rank's device), whose ticket
 * goes to *out_ticket (may be null). Tensors live on rank's device; a send tensor may be
 * its rank's recv tensor (in place). Returns INVALID_ARGUMENT (a null, stale or foreign
 * handle, a rank out of range, a tensor or stream on another device, sizes that do not
 * fit, an op the dtype lacks, a stream another rank of the same collective uses),
 * OUT_OF_MEMORY. Calls for one rank are externally synchronized: that rank's parts
 * are numbered in the order of its calls. */

/* recv = the reduction of every rank's send; same dtype and byte size. */
PHX_API phx_status phx_all_reduce(phx_comm comm, size_t rank, phx_stream stream, phx_tensor send,
                                  phx_tensor recv, phx_reduce_op op, uint64_t* out_ticket);

/* recv = every rank's send, concatenated in rank order (byte size ranks x send's);
 * for shapes [n, ...] -> [ranks * n, ...] it is the concatenation along the first axis. */
PHX_API phx_status phx_all_gather(phx_comm comm, size_t rank, phx_stream stream, phx_tensor send,
                                  phx_tensor recv, uint64_t* out_ticket);

/* recv = part rank of the reduction of every rank's send, whose byte size is ranks x
 * recv's: the inverse split of all_gather. */
PHX_API phx_status phx_reduce_scatter(phx_comm comm, size_t rank, phx_stream stream,
                                      phx_tensor send, phx_tensor recv, phx_reduce_op op,
                                      uint64_t* out_ticket);

/* tensor = root's tensor, on every rank (root's own is read, not written). */
PHX_API phx_status phx_broadcast(phx_comm comm, size_t rank, phx_stream stream, phx_tensor tensor,
                                 size_t root, uint64_t* out_ticket);

/* A message from rank to peer: rank's phx_send and peer's phx_recv, matched in the order
 * each pair of ranks calls them, on tensors of the same dtype and byte size. These
 * are not numbered among the collectives. */
PHX_API phx_status phx_send(phx_comm comm, size_t rank, phx_stream stream, phx_tensor tensor,
                            size_t peer, uint64_t* out_ticket);
PHX_API phx_status phx_recv(phx_comm comm, size_t rank, phx_stream stream, phx_tensor tensor,
                            size_t peer, uint64_t* out_ticket);

/* ---- Sharding --------------------------------------------------------------------------
 * A tensor split along one axis over a communicator's ranks, part r on rank r: the layout
 * of tensor-parallel weights and data-parallel batches. Errors as the collectives', and
 * INVALID_ARGUMENT for an axis past the rank of the tensors or shapes that do not split
 * (full's dimension axis must be ranks times part's; every other dimension equal).
 */

/* part = rank's part of root's full tensor split along axis. full is read on root only and
 * may be null on the other ranks. */
PHX_API phx_status phx_shard_scatter(phx_comm comm, size_t rank, phx_stream stream, phx_tensor full,
                                     size_t root, size_t axis, phx_tensor part,
                                     uint64_t* out_ticket);

/* full = every rank's part joined along axis in rank order, on every rank: all_gather
 * along an axis. */
PHX_API phx_status phx_shard_gather(phx_comm comm, size_t rank, phx_stream stream, phx_tensor part,
                                    size_t axis, phx_tensor full, uint64_t* out_ticket);

/* ---- Communicators over a transport -----------------------------------------------------
 * A communicator whose ranks live in several processes, one rank in each: this process's
 * rank runs on one device of its context, and a transport moves host bytes between the
 * processes. libphynexus_mpi (comm_mpi.h) makes one over MPI; a program may bring its own.
 * The collective calls are the same, with this process's rank only. The host runs them
 * one at a time, in the order this process called them (every process must call them in
 * the same order, as MPI requires), on host copies of the tensors; it exchanges each
 * call's description first, so that ranks that disagree fail together with
 * INVALID_ARGUMENT, and it reduces in rank order itself: results are the in-process
 * communicator's, bit for bit.
 */
typedef struct phx_comm_transport {
  size_t struct_size;
  size_t rank;     /* this process's rank, < ranks */
  size_t ranks;    /* >= 1 */
  void* user_data; /* passed to every entry */
  /* Each entry blocks until its part is done and returns OK, or an error status after
   * phx_set_last_error (DEVICE_UNAVAILABLE for a rank that is gone or does not answer
   * in time: never wait forever). The host calls them from one thread at a time per
   * communicator, in the same order in every process but for send and recv. */
  /* Every rank's bytes (bytes each) gathered in rank order into recv (ranks * bytes). */
  phx_status (*all_gather)(void* user_data, const void* send, void* recv, size_t bytes);
  /* Part p of send (bytes each, ranks parts) goes to rank p; rank p's part for this rank
   * arrives as part p of recv. */
  phx_status (*all_to_all)(void* user_data, const void* send, void* recv, size_t bytes);
  /* root's bytes at buffer, to every rank's buffer. */
  phx_status (*broadcast)(void* user_data, void* buffer, size_t bytes, size_t root);
  /* A message of bytes to peer; returns once buffer may be reused, without waiting for
   * peer to receive it (messages are buffered, as MPI_Bsend's are). */
  phx_status (*send)(void* user_data, const void* buffer, size_t bytes, size_t peer);
  /* The next message from peer into buffer; INVALID_ARGUMENT if it is not bytes long. */
  phx_status (*recv)(void* user_data, void* buffer, size_t bytes, size_t peer);
  /* (may be null) Called once, after the communicator's last collective has run. */
  void (*destroy)(void* user_data);
} phx_comm_transport;

/* Creates a communicator of transport->ranks ranks, of which this process holds
 * transport->rank, on device. On success the communicator keeps a copy of *transport
 * and calls its destroy once the communicator is destroyed and its last queued
 * collective has run; on failure nothing is kept and destroy is not called.
 * Returns INVALID_ARGUMENT (null, a missing entry, rank >= ranks), NOT_FOUND (no such
 * device), OUT_OF_MEMORY. Thread-safe. */
PHX_API phx_status phx_comm_create_transport(phx_context context, size_t device,
                                             const phx_comm_transport* transport,
                                             phx_comm* out_comm);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PHYNEXUS_COMM_H */
