// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read
// it back, close). Good enough for tests; a production rendezvous gets its
// port from the controller's per-worker range.
#pragma once

namespace accumulus::testing {

int FreeLoopbackPort();

}  // namespace accumulus::testing
