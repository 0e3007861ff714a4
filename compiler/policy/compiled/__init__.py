"""The policy compiler: each rule's `violations` comprehension, from the pack's CUE source
(parsed by the official parser through the bridge), as a plan Python runs (`plan.PackPlan`);
CUE evaluates what the plans do not cover."""
