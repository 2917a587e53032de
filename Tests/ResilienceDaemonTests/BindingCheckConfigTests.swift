import ResilienceDaemon
import ResiliencePolicyFile
import SIPPlugin
import Testing

/// `binding-check:` of an account: on unless the config turns it off, and only a boolean.
struct BindingCheckConfigTests {
    static func config(_ extra: String) -> String {
        "accounts:\n  - name: a\n    registrar: 198.18.0.1\n    user: a\n    domain: example.test\n    password: x\n"
            + extra
    }

    @Test func bindingsAreCheckedUnlessTheAccountTurnsItOff() throws {
        let plain = try DaemonConfigFile.parse(Self.config(""), file: "netres.yaml", directory: "/tmp")
        #expect(plain.accounts.first?.account.checksBindings == true)
        let off = try DaemonConfigFile.parse(
            Self.config("    binding-check: off\n"), file: "netres.yaml", directory: "/tmp")
        #expect(off.accounts.first?.account.checksBindings == false)
    }

    @Test func aBindingCheckThatIsNoBooleanIsALocatedError() {
        do {
            _ = try DaemonConfigFile.parse(
                Self.config("    binding-check: sometimes\n"), file: "bad.yaml", directory: "/tmp")
            Issue.record("binding-check: sometimes accepted")
        } catch {
            #expect(error.line == 7, "\(error)")
            #expect("\(error)".contains("binding-check must be true or false"), "\(error)")
        }
    }
}
