import ResilienceDaemon
import ResiliencePolicyFile
import SIPPlugin
import Testing

/// `transport: tls`, `sips:` registrars and the `tls:` mapping of an account.
@Suite struct DaemonConfigTLSTests {
    func parse(_ account: String) throws(PolicyFileError) -> SIPAccount {
        let text = """
            accounts:
              - name: alice
                user: alice
                domain: example.test
                password: pw
            \(account.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))

            """
        return try DaemonConfigFile.parse(text, file: "/etc/netres/netres.yaml", directory: "/etc/netres")
            .accounts[0].account
    }

    @Test func aTLSAccountDefaultsToPort5061AndResolvesItsFiles() throws {
        let account = try parse(
            """
            registrar: 198.18.0.1
            transport: tls
            tls: { ca-file: ca.pem, server-name: sip.example.test, certificate-file: me.crt, key-file: me.key }
            """)
        #expect(account.transport == .tls && account.registrarPort == 5061)
        #expect(account.tls.caFile == "/etc/netres/ca.pem")
        #expect(account.tls.certificateFile == "/etc/netres/me.crt" && account.tls.keyFile == "/etc/netres/me.key")
        #expect(account.tls.serverName == "sip.example.test")
        #expect(try parse("registrar: 198.18.0.1\ntransport: tcp").registrarPort == 5060)
        #expect(try parse("registrar: 198.18.0.1\ntransport: tls\nport: 5071").registrarPort == 5071)
    }

    /// RFC 3263 §4.2: a port given means A/AAAA only; without one, NAPTR and SRV decide.
    @Test func aRegistrarWithoutAPortLeavesThePortToItsSRVRecords() throws {
        #expect(try parse("registrar: lab.test").registrarPortIsExplicit == false)
        #expect(try parse("registrar: lab.test\nport: 5060").registrarPortIsExplicit)
        #expect(try parse("registrar: sips:lab.test").registrarPortIsExplicit == false)
    }

    @Test func aSIPSRegistrarMeansTLS() throws {
        let account = try parse("registrar: sips:sip.example.test")
        #expect(account.registrarHost == "sip.example.test")
        #expect(account.transport == .tls && account.registrarPort == 5061)
        #expect(account.tls == SIPTLSSettings(), "the system trust store and the registrar's name")
    }

    @Test(arguments: [
        ("registrar: sips:sip.example.test\ntransport: udp", "a sips: registrar needs transport tls"),
        ("registrar: h\ntransport: tls\ntls: { certificate-file: me.crt }", "both certificate-file and key-file"),
        ("registrar: h\ntransport: tls\ntls: { ca-fil: ca.pem }", "ca-fil"),
    ])
    func contradictionsAreLocatedErrors(account: String, message: String) {
        let error = #expect(throws: PolicyFileError.self) { try parse(account) }
        #expect(error.map { "\($0)" }?.contains(message) == true, "\(String(describing: error))")
        #expect((error?.line ?? 0) >= 6)
    }
}
