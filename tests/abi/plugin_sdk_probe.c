/* The plugin SDK has no library of its own, so abidw has nothing to read its ABI from.
 * This probe gives it one: a shared library whose exported functions mention every
 * struct, the function table and the entry of plugin.h, so that their layout (and that of
 * every phynexus.h type they reach) lands in the probe's DWARF. Never loaded, only read
 * by tests/abi/abi_check.sh. */
#include <phynexus/plugin.h>

#define PROBE_EXPORT __attribute__((visibility("default")))

/* The entry every plugin exports, with its declared signature. */
phx_status phx_plugin_entry(const phx_plugin_host* host, const phx_plugin_api** out_api) {
  (void)host;
  (void)out_api;
  return PHX_STATUS_UNSUPPORTED;
}

PROBE_EXPORT phx_plugin_entry_fn phx_abi_probe_entry_fn(void) { return phx_plugin_entry; }
PROBE_EXPORT void phx_abi_probe_host(const phx_plugin_host* host) { (void)host; }
PROBE_EXPORT void phx_abi_probe_api(const phx_plugin_api* api) { (void)api; }
PROBE_EXPORT void phx_abi_probe_device_info(const phx_plugin_device_info* info) { (void)info; }
PROBE_EXPORT void phx_abi_probe_tensor(const phx_plugin_tensor* tensor) { (void)tensor; }
PROBE_EXPORT void phx_abi_probe_profile(const phx_plugin_profile* profile) { (void)profile; }
PROBE_EXPORT void phx_abi_probe_op(const phx_plugin_op* op) { (void)op; }
PROBE_EXPORT void phx_abi_probe_op_variant(const phx_plugin_op_variant* variant) { (void)variant; }
PROBE_EXPORT void phx_abi_probe_graph(const phx_plugin_graph* graph) { (void)graph; }
PROBE_EXPORT void phx_abi_probe_value(const phx_plugin_value* value) { (void)value; }
PROBE_EXPORT void phx_abi_probe_node(const phx_plugin_node* node) { (void)node; }
PROBE_EXPORT void phx_abi_probe_value_range(const phx_plugin_value_range* range) { (void)range; }
PROBE_EXPORT void phx_abi_probe_node_report(const phx_plugin_node_report* report) { (void)report; }
