// doc:begin README.md
import Logging
import NetResilience
import ResiliencePolicyFile

func startWithTheUsersPolicy() throws {  // doc:hidden
    let logger = Logger(label: "app")
    let policy = try PolicyFile.load(path: "my-policy.yaml").policy  // errors name file, line and column
    let manager = ResilienceManager(
        source: NetlinkMonitor(logger: logger), policy: policy, plugins: [ChatPlugin()], logger: logger)
    _ = manager  // doc:hidden
}  // doc:hidden
// doc:end
