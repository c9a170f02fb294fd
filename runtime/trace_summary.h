// Reads a Chrome trace JSON back into the stall table: what
// `layerstream trace summarize FILE` prints. It rebuilds the per-track totals
// from the spans themselves (their kind is the event's "cat", or args.kind),
// so it also works on a trace cut or merged by other tools.
// defines: summarize_chrome_trace(), chrome_trace_track_stats()
#pragma once

#include <string>
#include <vector>

#include "runtime/status.h"
#include "runtime/trace.h"

namespace ls {

// One TrackStats per thread track (thread_name metadata, or a bare pid/tid that
// carries spans), in the order the tracks first appear.
// from_step > 0: only the warm part of the run — spans are clipped to start at
// the first busy span of step from_step on the "compute" track (the moment
// compute began that step) and to end with that track's last busy span (the
// last step's end), so neither the pipeline's fill nor its wind-down counts.
Expected<std::vector<TrackStats>> chrome_trace_track_stats(const std::string& path,
                                                           int64_t from_step = 0);

// The stall table of a trace written by Tracer::write_chrome_json.
Expected<StallTable> summarize_chrome_trace(const std::string& path, int64_t from_step = 0);

}  // namespace ls
