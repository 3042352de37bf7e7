// accumulus: the command-line client.
#include <signal.h>

#include "client/cli.h"

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);  // `accumulus watch ... | head` must not crash mid-write
  return accumulus::client::RunCli(argc, argv);
}
