// Launch overhead: an empty kernel on one block, launched back to back; its time per launch
// is what the host and the front end cost.
/* flipflop-measure
{"kernel": "empty_kernel",
 "grid": ["1"],
 "blocks": "32,1024",
 "args": [],
 "work": {"empty_launch": "1", "active_sms": "1"}}
*/

extern "C" __global__ void empty_kernel() {}
