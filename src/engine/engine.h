/* engine.h — the engine, for the layers above it: one include for its parts, each in its own header (docs/design.md §7).
 *
 * Everything here runs on the communicator's owner thread, from the top
 * level of fold__progress (never inside a transport's poll), on the engine
 * clock (fold__now): real time on real transports, virtual time in the
 * simulator. The same code therefore runs unchanged on both.
 *
 *   engine/request.h   requests, matching, the engine's point-to-point entry
 *   engine/progress.h  progress passes, waits, tasks, watchers, the progress thread
 *   engine/timer.h     timers fired by the progress pass
 *   engine/time.h      the clock and cost interface, injected delays, link measurements
 *   engine/handler.h   extension contexts and handlers of unsolicited messages
 *   engine/svc.h       the engine's per-communicator state and extension slots
 *   engine/fail.h      fail-stop: failing, lost peers, failure reports, timeouts
 *   engine/family.h    sub-communicators sharing one set of transports: routing */
#ifndef FOLD_ENGINE_H
#define FOLD_ENGINE_H

#include "core/internal.h"
#include "engine/request.h"
#include "engine/progress.h"
#include "engine/timer.h"
#include "engine/time.h"
#include "engine/handler.h"
#include "engine/svc.h"
#include "engine/fail.h"
#include "engine/family.h"

#endif /* FOLD_ENGINE_H */
