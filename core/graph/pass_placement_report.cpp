// A warning when the device a user compiled for runs little of the model: an f32 model
// compiled for the NPU simulator, whose convolutions then all run on the CPU device,
// otherwise looks like a success (issue: "says nothing").
#include <algorithm>
#include <map>

#include "errors.h"
#include "node_cost.h"
#include "op_rules.h"
#include "passes.h"

namespace phx::graph {
namespace {

// Why node n went to another device than the executable's.
std::string reason_off_device(const Program& program, size_t n) {
  if (device_takes(program, 0, n)) return "placed by cost";
  return "no " + variant_text(variant_of_node(program.graph, program.nodes[n]));
}

}  // namespace

void report_placement(Program& program) {
  std::vector<size_t> counted, away;  // live nodes computed at run time; those off device 0
  for (size_t n = 0; n < program.nodes.size(); ++n) {
    if (!program.live[n] || (!program.folded.empty() && program.folded[n])) continue;
    counted.push_back(n);
    if (program.placement[n] != 0) away.push_back(n);
  }
  if (away.empty()) return;
  std::vector<Operand> operands;
  try {
    operands = program.assessed.empty() ? assessment_operands(program) : program.assessed;
  } catch (const Error&) {
    return;  // no sizes to weigh the nodes at: nothing to report
  }
  double total = 0, off = 0;
  for (size_t n : counted) {
    const double flops = node_flops(program.nodes[n], operands);
    total += flops;
    if (program.placement[n] != 0) off += flops;
  }
  // Where no FLOP is counted (data movement alone), the share of nodes stands in.
  const double share = total > 0 ? off / total : double(away.size()) / double(counted.size());
  if (share <= 0.5) return;
  std::map<std::string, size_t> reasons;
  for (size_t n : away) ++reasons[reason_off_device(program, n)];
  std::vector<std::pair<size_t, std::string>> ranked;
  for (const auto& [reason, count] : reasons) ranked.emplace_back(count, reason);
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string why;
  for (size_t i = 0; i < std::min<size_t>(ranked.size(), 3); ++i)
    why += (i ? "; " : "") + ranked[i].second + " (" + std::to_string(ranked[i].first) + ")";
  if (ranked.size() > 3) why += "; ...";
  const Device& device = *program.devices[0];
  program.graph.context->logger->warn(
      "compile: {} of {} nodes, {:.0f}% of the work, run on other devices than device {} ({}): "
      "{}",
      away.size(), counted.size(), 100 * share, device.index, device.name, why);
}

}  // namespace phx::graph
