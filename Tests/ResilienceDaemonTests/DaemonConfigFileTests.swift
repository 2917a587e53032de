import Foundation
import ResilienceCore
import ResilienceDaemon
import ResiliencePolicyFile
import SIPPlugin
import Testing

struct DaemonConfigFileTests {
    static let good = """
        log-format: json
        control-socket: run/control.sock
        interfaces: [eth0, "wlan*"]
        hold-down: 1500ms
        app-state: background
        register-rate-ceiling: 400
        flow-ping-timeout: 3s
        accounts:
          - name: alice
            registrar: 198.18.0.1
            port: 5070
            transport: tcp
            user: alice
            domain: example.test
            password: "s3cret-alice"
            expires: 300
            outbound: { instance-id: "urn:uuid:00000000-0000-0000-0000-000000000001", reg-id: 1 }
            push: { provider: apns, param: "TEAMID.com.example.voip", token-file: alice.push }
            subscriptions:
              - { package: reg }
              - { package: presence-others, resource: "sip:bob@example.test" }
            publish-presence: true
            flow-ping: 25s
        """

    @Test func aGoodFileBecomesTheModelWithPathsResolvedAgainstItsDirectory() throws {
        let config = try DaemonConfigFile.parse(Self.good, file: "netres.yaml", directory: "/etc/netres")
        #expect(config.logFormat == .json)
        #expect(config.controlSocket == "/etc/netres/run/control.sock")
        #expect(config.interfaces == ["eth0", "wlan*"])
        #expect(config.holdDown == .milliseconds(1500))
        #expect(config.appState == .background)
        #expect(config.registerRateCeiling == 400)
        #expect(config.flowPingTimeout == .seconds(3))
        #expect(DaemonConfig().flowPingTimeout == .seconds(10), "RFC 5626 §4.4.1's 10 s by default")
        #expect(config.policyPath == nil)
        let entry = try #require(config.accounts.first)
        let account = entry.account
        #expect(account.registrarHost == "198.18.0.1" && account.registrarPort == 5070 && account.transport == .tcp)
        #expect(account.password == "s3cret-alice" && account.expires == 300 && account.regID == 1)
        #expect(account.instanceID == "urn:uuid:00000000-0000-0000-0000-000000000001")
        #expect(account.publishesPresence)
        #expect(account.flowPing == .every(.seconds(25)) && account.flowPingInterval == .seconds(25))
        #expect(account.push == nil)
        #expect(
            entry.push
                == PushConfig(provider: "apns", param: "TEAMID.com.example.voip", tokenFile: "/etc/netres/alice.push"))
        #expect(
            account.subscriptions == [
                SubscriptionTarget(package: .reg),
                SubscriptionTarget(package: .presenceOthers, resource: "sip:bob@example.test"),
            ])
        #expect(!"\(config)".contains("s3cret-alice"))
    }

    /// Each class of bad input → (code, line, column, fragment of the message or hint).
    static let badInputs: [(String, String, PolicyFileError.Code, Int, Int, String)] = [
        ("unknown key", "acounts: []\n", .unknownKey, 1, 1, "did you mean \"accounts\"?"),
        ("wrong type", "accounts: 3\n", .wrongType, 1, 11, "accounts must be a list"),
        (
            "missing field", "accounts:\n  - name: a\n    registrar: 198.18.0.1\n    user: a\n    password: x\n",
            .missingKey, 2, 5, "no \"domain\""
        ),
        ("both passwords", account("password: x\n    password-file: pw\n"), .contradiction, 7, 20, "exactly one"),
        ("no password", account(""), .contradiction, 2, 5, "exactly one"),
        ("unreadable password file", account("password-file: /nonexistent/pw\n"), .unreadable, 6, 20, "cannot read"),
        ("bad duration", "hold-down: 5\naccounts: []\n", .wrongType, 1, 12, "must be a duration"),
        ("unknown transport", account("password: x\n    transport: tlss\n"), .unknownName, 7, 16, "transport"),
        (
            "unknown package", account("password: x\n    subscriptions: [{ package: presense-others }]\n"),
            .unknownName, 7, 32, "did you mean \"presence-others\"?"
        ),
        (
            "unknown account key", account("password: x\n    pasword-file: pw\n"), .unknownKey, 7, 5,
            "did you mean \"password-file\"?"
        ),
        ("bad port", account("password: x\n    port: 70000\n"), .invalidValue, 7, 11, "out of range"),
        ("renamed key", account("password: x\n    keep-alive: 25s\n"), .unknownKey, 7, 5, "renamed to \"flow-ping\""),
        ("bad flow-ping", account("password: x\n    flow-ping: often\n"), .wrongType, 7, 16, "must be a duration"),
        (
            "flow-ping too short", account("password: x\n    flow-ping: 0\n"), .invalidValue, 7, 16,
            "between 1s and 1h"
        ),
        ("hooks missing", "hooks: { directory: /nonexistent }\naccounts: []\n", .unreadable, 1, 21, "not a directory"),
        ("hooks on a file", "hooks: { directory: /etc/passwd }\naccounts: []\n", .unreadable, 1, 21, "not a directory"),
        ("hooks without directory", "hooks: { timeout: 1s }\naccounts: []\n", .missingKey, 1, 8, "directory"),
        (
            "hooks zero timeout", "hooks: { directory: /tmp, timeout: 0 }\naccounts: []\n", .invalidValue, 1, 36,
            "must be positive"
        ),
        (
            "ceiling zero", "register-rate-ceiling: 0\naccounts: []\n", .invalidValue, 1, 24,
            "register-rate-ceiling"
        ),
        (
            "flow-ping timeout beyond RFC 5626's 10 s", "flow-ping-timeout: 11s\naccounts: []\n", .invalidValue, 1, 20,
            "between 1s and 10s"
        ),
        (
            "ceiling fraction", "register-rate-ceiling: 2.5\naccounts: []\n", .wrongType, 1, 24,
            "whole number"
        ),
        ("metrics bad port", "metrics: { port: 99999 }\naccounts: []\n", .invalidValue, 1, 18, "is not a port"),
        (
            "metrics unknown key", "metrics: { prot: 9464 }\naccounts: []\n", .unknownKey, 1, 12,
            "did you mean \"port\"?"
        ),
        ("syntax", "accounts: [\n", .syntax, 0, 0, "YAML syntax error"),
        (
            "header injection in user", sip(user: "\"alice\\r\\nX-Injected: yes\""), .invalidValue, 4, 11,
            "user has a CR"
        ),
        ("space in user", sip(user: "\"al ice\""), .invalidValue, 4, 11, "user has a space"),
        ("bad escape in user", sip(user: "al%4"), .invalidValue, 4, 11, "two hex digits"),
        ("empty registrar", sip(registrar: "\"\""), .invalidValue, 3, 16, "registrar is empty"),
        ("registrar with a path", sip(registrar: "198.18.0.1/x"), .invalidValue, 3, 16, "registrar is not a host"),
        ("domain with a space", sip(domain: "\"exa mple.test\""), .invalidValue, 5, 13, "domain is not a host"),
        ("header injection in domain", sip(domain: "\"a.test\\r\\nX: y\""), .invalidValue, 5, 13, "domain"),
        ("NUL in password", account("password: \"x\\0y\"\n"), .invalidValue, 6, 15, "control character"),
        ("CR in password", account("password: \"x\\ry\"\n"), .invalidValue, 6, 15, "control character"),
        ("quote in auth-user", account("password: x\n    auth-user: 'a\"b'\n"), .invalidValue, 7, 16, "auth-user has"),
        ("expires below a minute", account("password: x\n    expires: 20\n"), .invalidValue, 7, 14, "out of range"),
        (
            "subscription expires of zero", account("password: x\n    subscriptions: [{ package: reg, expires: 0 }]\n"),
            .invalidValue, 7, 46, "out of range"
        ),
        (
            "control socket too long", "control-socket: /\(String(repeating: "s", count: 120))\naccounts: []\n",
            .invalidValue, 1, 17, "more than a unix socket address holds"
        ),
        ("no accounts key", "log-format: human\n", .missingKey, 1, 1, "accounts"),
        (
            "unknown incoming-calls", account("password: x\n    incoming-calls: anwser\n"), .unknownName, 7, 21,
            "did you mean \"answer\"?"
        ),
        (
            "incoming-calls not a word", account("password: x\n    incoming-calls: [ring]\n"), .wrongType, 7, 21,
            "incoming-calls mode"
        ),
        (
            "ringing-timeout too long", account("password: x\n    ringing-timeout: 2h\n"), .invalidValue, 7, 22,
            "ringing-timeout must be between 1s and 1h"
        ),
    ]

    /// One account with the given SIP values (written into the YAML as they are).
    static func sip(user: String = "a", registrar: String = "198.18.0.1", domain: String = "example.test") -> String {
        "accounts:\n  - name: a\n    registrar: \(registrar)\n    user: \(user)\n    domain: \(domain)\n    password: x\n"
    }

    static func account(_ extra: String) -> String {
        "accounts:\n  - name: a\n    registrar: 198.18.0.1\n    user: a\n    domain: example.test\n    " + extra
    }

    @Test(arguments: badInputs.indices)
    func everyBadInputIsALocatedError(index: Int) {
        let (what, text, code, line, column, fragment) = Self.badInputs[index]
        do {
            _ = try DaemonConfigFile.parse(text, file: "bad.yaml", directory: "/tmp")
            Issue.record("\(what): accepted")
        } catch {
            #expect(error.code == code, "\(what): \(error)")
            #expect(error.file == "bad.yaml")
            // Line 0: only the code and message are checked (libyaml picks the syntax error's mark).
            if line > 0 { #expect((error.line, error.column) == (line, column), "\(what): \(error)") }
            #expect(error.description.contains(fragment), "\(what): \(error)")
        }
    }

    /// A daemon whose services all come from external plugins names no SIP account of its own;
    /// the key itself is still required (an empty list is a choice, not a forgotten line).
    @Test func anEmptyAccountListIsADaemonForExternalPluginsOnly() throws {
        let config = try DaemonConfigFile.parse("accounts: []\n", file: "netres.yaml", directory: "/etc")
        #expect(config.accounts.isEmpty)
    }

    @Test func hooksNameAnExistingDirectoryResolvedAgainstTheConfigWithATimeout() throws {
        let config = try DaemonConfigFile.parse(
            "hooks: { directory: bin, timeout: 3s }\n" + Self.sip(), file: "netres.yaml", directory: "/usr")
        #expect(config.hooks == HooksConfig(directory: "/usr/bin", timeout: .seconds(3)))
        let defaults = try DaemonConfigFile.parse(
            "hooks: { directory: /tmp }\n" + Self.sip(), file: "netres.yaml", directory: "/etc")
        #expect(defaults.hooks == HooksConfig(directory: "/tmp", timeout: .seconds(10)))
        #expect(try DaemonConfigFile.parse(Self.sip(), file: "netres.yaml", directory: "/etc").hooks == nil)
    }

    /// Values RFC 3261 allows pass: escapes and user-unreserved marks, IPv6 with or without
    /// brackets, a trailing-dot host name, UTF-8 in a digest user name.
    @Test func validSIPValuesPass() throws {
        for text in [
            Self.sip(user: "al%41ice+1;x=y"), Self.sip(registrar: "\"[2001:db8::1]\""),
            Self.sip(registrar: "2001:db8::1"),
            Self.sip(domain: "sip.example.test."), Self.account("password: x\n    auth-user: \"Zoë\"\n"),
        ] {
            #expect(throws: Never.self, "\(text)") {
                try DaemonConfigFile.parse(text, file: "c.yaml", directory: "/tmp")
            }
        }
    }

    @Test func metricsAreOffByDefaultAndOnLoopbackWhenOn() throws {
        let off = try DaemonConfigFile.parse(Self.sip(), file: "netres.yaml", directory: "/tmp")
        #expect(off.metrics == nil)
        let on = try DaemonConfigFile.parse(
            "metrics: { port: 9100 }\n" + Self.sip(), file: "netres.yaml", directory: "/tmp")
        #expect(on.metrics == MetricsConfig(address: "127.0.0.1", port: 9100))
    }

    @Test func flowPingDefaultsPerTransportAndCanBeTurnedOff() throws {
        let udp = try DaemonConfigFile.parse(Self.account("password: x\n"), file: "c.yaml", directory: "/tmp")
        #expect(udp.accounts.first?.account.flowPing == .transportDefault)
        #expect(udp.accounts.first?.account.flowPingInterval == .seconds(30))
        let tcp = try DaemonConfigFile.parse(
            Self.account("password: x\n    transport: tcp\n"), file: "c.yaml", directory: "/tmp")
        #expect(tcp.accounts.first?.account.flowPingInterval == .seconds(120))
        let off = try DaemonConfigFile.parse(
            Self.account("password: x\n    flow-ping: off\n"), file: "c.yaml", directory: "/tmp")
        #expect(off.accounts.first?.account.flowPing == .off)
        #expect(off.accounts.first?.account.flowPingInterval == nil)
    }

    @Test func errorsNeverQuoteAPasswordAndTheFileNamesIt() throws {
        let text = Self.account("password: hunter2-secret\n    password-file: pw\n")
        let error = try #require(throws: PolicyFileError.self) {
            try DaemonConfigFile.parse(text, file: "bad.yaml", directory: "/tmp")
        }
        #expect(!error.description.contains("hunter2-secret"))
        #expect(error.description.hasPrefix("bad.yaml:"))
    }

    @Test func aPasswordFileIsReadRelativeToTheConfig() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("netres-cfg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try "from-file-secret\n".write(
            to: directory.appendingPathComponent("a.password"), atomically: true, encoding: .utf8)
        let config = try DaemonConfigFile.parse(
            Self.account("password-file: a.password\n"), file: "c.yaml", directory: directory.path)
        #expect(config.accounts.first?.account.password == "from-file-secret")
    }

    /// Found by FuzzDaemonConfig: after a bare CR (a line break to libyaml, not to an editor) the
    /// unknown key below was reported at line 4 of a 2-line file.
    @Test func aBareCarriageReturnIsRejectedOnTheLineAnEditorShows() {
        #expect {
            _ = try DaemonConfigFile.parse("hold-down: 2s\r\r\rbogus: 1\n", file: "c.yaml", directory: "/nonexistent")
        } throws: { error in
            guard let error = error as? PolicyFileError else { return false }
            return (error.code, error.line, error.column) == (.syntax, 1, 14)
        }
    }

    @Test func theExampleConfigParses() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("examples/netres.yaml")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("netres-ex-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // The example's password-file is relative: give it one beside a copy of the example.
        let copy = directory.appendingPathComponent("netres.yaml")
        try FileManager.default.copyItem(at: example, to: copy)
        try "example-secret\n".write(
            to: directory.appendingPathComponent("alice.password"), atomically: true, encoding: .utf8)
        let config = try DaemonConfigFile.load(path: copy.path)
        #expect(config.accounts.map(\.account.name) == ["alice"])
        #expect(config.accounts.first?.account.password == "example-secret")
        #expect(config.accounts.first?.push?.provider == "apns")
        #expect(config.accounts.first?.incomingCalls == .ring)
    }

    @Test(arguments: IncomingCalls.allCases)
    func incomingCallsIsReadPerAccountAndRingsByDefault(mode: IncomingCalls) throws {
        let text =
            Self.account("password: x\n    incoming-calls: \(mode.rawValue)\n")
            + "  - { name: b, registrar: 198.18.0.1, user: b, domain: example.test, password: y }\n"
        let config = try DaemonConfigFile.parse(text, file: "c.yaml", directory: "/tmp")
        #expect(config.accounts.map(\.incomingCalls) == [mode, .ring])
    }

    @Test func ringingTimeoutIsReadPerAccountAndIsAMinuteByDefault() throws {
        let text =
            Self.account("password: x\n    ringing-timeout: 25s\n")
            + "  - { name: b, registrar: 198.18.0.1, user: b, domain: example.test, password: y }\n"
        let config = try DaemonConfigFile.parse(text, file: "c.yaml", directory: "/tmp")
        #expect(config.accounts.map(\.account.ringingTimeout) == [.seconds(25), .seconds(60)])
    }
}
