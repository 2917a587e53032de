// doc:begin README.md
import Logging
import NetResilience
import ResiliencePolicyFile

func startWithTheUsersPolicy() async throws {  // doc:hidden
    let logger = Logger(label: "app")
    let monitor = NetlinkMonitor(logger: logger)
    try await monitor.start()
    let policy = try PolicyFile.load(path: "my-policy.yaml").policy  // errors name file, line and column
    let manager = ResilienceManager(source: monitor, policy: policy, plugins: [ChatPlugin()], logger: logger)
    _ = manager  // doc:hidden
}  // doc:hidden
// doc:end
