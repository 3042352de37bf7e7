// Graceful stop for daemons: block SIGINT and SIGTERM in every thread (call
// before starting any), then wait for one on the main thread.
#pragma once

namespace accumulus {

void BlockTerminationSignals();
// Returns the signal received (SIGINT or SIGTERM).
int WaitForTerminationSignal();

}  // namespace accumulus
