import Foundation
import ResilienceDaemon
import ResiliencePolicyFile
import SIPPlugin
import Testing

/// Issue 25: every config value that reaches a SIP header passes a grammar check (a CR LF in
/// it would start an injected header line), refused with file, line and column; a TLS file that
/// is not a regular file is refused before anything reads it (a FIFO would block an event loop).
struct DaemonConfigHostileTests {
    static func account(_ extra: String) -> String { DaemonConfigFileTests.account("password: x\n    " + extra) }

    static let injections: [(what: String, text: String, fragment: String)] = [
        (
            "subscriptions[].resource",
            account("subscriptions: [{ package: reg, resource: \"sip:a@example.test\\r\\nX-Injected: 1\" }]\n"),
            "resource has a CR"
        ),
        (
            "push.param",
            account("push: { provider: apns, param: \"TEAM.com.example\\r\\nX-Injected: 1\", token-file: t }\n"),
            "push param has a CR"
        ),
        (
            "outbound.instance-id",
            account("outbound: { instance-id: \"urn:uuid:1\\r\\nX-Injected: 1\" }\n"),
            "instance-id has a CR"
        ),
        (
            "tls.server-name",
            account("transport: tls\n    tls: { server-name: \"sip.example.test\\r\\nX-Injected: 1\" }\n"),
            "tls server-name has a CR"
        ),
    ]

    /// The 1-based line and column of the quoted value holding the CR LF escape.
    static func location(of text: String) -> (line: Int, column: Int) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let index = lines.firstIndex { $0.contains("\\r\\n") } ?? 0
        let quote = lines[index].firstIndex(of: "\"") ?? lines[index].startIndex
        return (index + 1, lines[index].distance(from: lines[index].startIndex, to: quote) + 1)
    }

    @Test(arguments: injections.indices)
    func aValueWithCRLFIsRefusedWithFileLineAndColumn(index: Int) {
        let (what, text, fragment) = Self.injections[index]
        do {
            _ = try DaemonConfigFile.parse(text, file: "hostile.yaml", directory: "/tmp")
            Issue.record("\(what): accepted")
        } catch {
            #expect(error.code == .invalidValue, "\(what): \(error)")
            #expect(error.file == "hostile.yaml")
            #expect((error.line, error.column) == Self.location(of: text), "\(what): \(error)")
            #expect(error.description.contains(fragment), "\(what): \(error)")
        }
    }

    @Test func theSameValuesWithoutTheInjectionPass() throws {
        let config = try DaemonConfigFile.parse(
            Self.account(
                "subscriptions: [{ package: reg, resource: \"sip:a@example.test\" }]\n"
                    + "    push: { provider: apns, param: \"TEAM.com.example.voip\", token-file: t }\n"
                    + "    outbound: { instance-id: \"urn:uuid:6c2d1f0e-3f3a-4c1b-9a57-0d5e4c1b2a10\" }\n"
                    + "    transport: tls\n    tls: { server-name: sip.example.test }\n"),
            file: "good.yaml", directory: "/tmp")
        #expect(config.accounts[0].account.tls.serverName == "sip.example.test")
    }

    @Test func aFIFOAsTheCAFileIsRefusedWithoutReadingIt() throws {
        let directory = "/tmp/netres-fifo-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(mkfifo(directory + "/ca.pem", 0o600) == 0)
        let text = Self.account("transport: tls\n    tls: { ca-file: ca.pem }\n")
        // Reading the FIFO would block this thread for ever (the suite's time limit would end it).
        #expect {
            _ = try DaemonConfigFile.parse(text, file: "fifo.yaml", directory: directory)
        } throws: { error in
            guard let error = error as? PolicyFileError else { return false }
            return error.code == .invalidValue && error.line == 8 && error.column == 21
                && error.description.contains("is a FIFO, not a regular file")
        }
    }
}
