// TLS material is checked before anything listens or dials: a missing flag,
// an unreadable file and a file that is not the PEM expected are each named
// (flag and file), and the file's content is never quoted.
#include "common/tls.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/support/temp_dir.h"

namespace accumulus {
namespace {

TEST(Tls, EachMissingOrWrongFileIsNamedByItsFlagAndPathWithoutItsContent) {
  const testing::TempDir temp;
  const std::string secret = temp.path() + "/secret.txt";
  std::ofstream(secret) << "hunter2-not-a-certificate\n";
  const std::string key = temp.path() + "/key.pem";
  std::ofstream(key) << "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";

  ServerTls server;
  EXPECT_EQ(MakeServerCredentials(server).status().message(),
            "--tls-cert is required (a PEM file)");
  server.cert = temp.path() + "/absent.pem";
  EXPECT_EQ(MakeServerCredentials(server).status().message(),
            "--tls-cert " + server.cert + ": cannot be read (No such file or directory)");
  server.cert = secret;
  const std::string not_pem = MakeServerCredentials(server).status().message();
  EXPECT_NE(not_pem.find("--tls-cert " + secret + ": no PEM \"CERTIFICATE\" block"),
            std::string::npos)
      << not_pem;
  EXPECT_EQ(not_pem.find("hunter2"), std::string::npos) << "content quoted: " << not_pem;
  server.cert = key;  // a key where a certificate belongs
  EXPECT_NE(MakeServerCredentials(server).status().message().find("no PEM \"CERTIFICATE\""),
            std::string::npos);

  ClientTls client;
  client.cert = key;
  EXPECT_EQ(MakeChannelCredentials(client).status().message(),
            "--tls-cert and --tls-key go together: give both or neither");
  client.cert.clear();
  client.ca = secret;
  EXPECT_NE(MakeChannelCredentials(client).status().message().find("--tls-ca " + secret),
            std::string::npos);
}

TEST(Tls, InsecureNeedsNoFilesAndTheSystemRootsNeedNoCa) {
  ServerTls server;
  server.insecure = true;
  EXPECT_TRUE(MakeServerCredentials(server).ok());
  EXPECT_TRUE(MakeChannelCredentials(ClientTls{}).ok());
}

}  // namespace
}  // namespace accumulus
