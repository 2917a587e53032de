import ChildProcesses
import Foundation
import NetworkLab
import Testing

/// `netres run` with a `transport: tls` account against Kamailio's tls module (5061), with
/// certificates the lab generates: it registers and subscribes over TLS, survives a flap and an
/// address change, and a certificate it must not trust (wrong CA, expired) fails once, clearly
/// and permanently, without a retry storm and without a REGISTER reaching the registrar.
@Suite(
    .serialized, .needsNamespaces,
    .enabled(if: DaemonLab.isInstalled && RegistrarTLS.isInstalled, "needs kamailio (tls module) and openssl"),
    .timeLimit(.minutes(2)))
struct SIPTLSFaultTests {
    /// The account lines trusting `caFile`, checking the name the lab's certificate carries.
    static func account(
        caFile: String, serverName: String = RegistrarTLS.serverName, subscriptions: Bool = false,
        client: String? = nil
    ) -> [String] {
        ["tls: { ca-file: \(caFile), server-name: \(serverName)\(client.map { ", " + $0 } ?? "") }"]
            + (subscriptions ? ["subscriptions: [{ package: reg }]"] : [])
    }

    @Test func aTLSAccountRegistersSubscribesAndSurvivesAFlapAndAnAddressChange() async throws {
        let user = "tlsflap"
        try await DaemonLab.with(tls: .valid) { lab, tls in
            let caFile = tls.caFile
            try await lab.startClient(
                user: user,
                config: try lab.writeDaemonConfig(
                    user: user, transport: "tls", account: Self.account(caFile: caFile, subscriptions: true)))
            #expect(
                await eventually(within: .seconds(30)) { !lab.lines("REGISTERED", user: user).isEmpty },
                "\(lab.actionLog(of: user))")
            #expect(lab.lines("REGISTER", user: user).allSatisfy { $0.fields["proto"] == "tls" })
            #expect(lab.lines("REGISTERED", user: user).first?.contact.contains("transport=tls") == true)
            let subscribed = await eventually(within: .seconds(30)) {
                lab.actionLog(of: user).contains {
                    $0.service == "\(user).subscription.reg" && $0.outcome == "succeeded"
                }
            }
            #expect(subscribed, "\(lab.actionLog(of: user))")
            #expect(lab.lines("SUBSCRIBE", user: user).contains { $0.fields["proto"] == "tls" })

            let (downAt, upAt) = try await lab.flapClientLink()
            #expect(lab.lines("REGISTER", user: user).filter { $0.at > downAt && $0.at < upAt }.isEmpty)
            #expect(
                await eventually(within: .seconds(5)) { lab.lines("REGISTERED", user: user).contains { $0.at > upAt } },
                "a new TLS flow (handshake included) re-registered after the flap")

            let new = try await lab.moveClient()
            let moved = await eventually(within: .seconds(5)) {
                lab.lines("REGISTERED", user: user).contains { isContact($0.contact, at: new) }
            }
            let output = (try? String(contentsOfFile: lab.clientOutput(of: user), encoding: .utf8)) ?? ""
            #expect(moved, "REGISTERED: \(lab.lines("REGISTERED", user: user).map(\.contact)); \(output.suffix(3000))")
            #expect(lab.lines("REGISTER", user: user).allSatisfy { $0.fields["proto"] == "tls" })
        }
    }

    /// Starts `user` with `caFile` against `lab` and returns its register actions after 4 s.
    func refusedRegistrations(
        _ lab: DaemonLab, user: String, caFile: String, serverName: String = RegistrarTLS.serverName
    ) async throws -> [DaemonLab.ActionLine] {
        let account = Self.account(caFile: caFile, serverName: serverName)
        try await lab.startClient(
            user: user, config: try lab.writeDaemonConfig(user: user, transport: "tls", account: account))
        let failed = await eventually(within: .seconds(30)) {
            lab.actionLog(of: user).contains { $0.action == "register" && $0.outcome == "failed" }
        }
        #expect(failed, "\(lab.actionLog(of: user))")
        // Long enough for several retries, had the failure been retryable (backoff starts at 1 s).
        try await Task.sleep(for: .seconds(4))
        #expect(lab.lines("REGISTER", user: user).isEmpty, "no REGISTER crossed a refused TLS flow")
        return lab.actionLog(of: user).filter { $0.action == "register" && $0.outcome == "failed" }
    }

    @Test func aCertificateFromAnotherCAIsRefusedOnceNamingWhy() async throws {
        try await DaemonLab.with(tls: .valid) { lab, tls in
            let failures = try await refusedRegistrations(
                lab, user: "tlswrongca", caFile: tls.otherCAFile)
            #expect(failures.count == 1, "a permanent failure is not retried: \(failures)")
            let error = failures.first?.error ?? ""
            #expect(error.contains("not signed by a trusted CA") && error.contains("other-ca.pem"), "\(error)")
        }
    }

    @Test func anExpiredCertificateIsRefusedOnceNamingWhy() async throws {
        try await DaemonLab.with(tls: .expired) { lab, tls in
            let failures = try await refusedRegistrations(
                lab, user: "tlsexpired", caFile: tls.caFile)
            #expect(failures.count == 1, "a permanent failure is not retried: \(failures)")
            #expect(failures.first?.error?.contains("certificate expired on") == true, "\(failures)")
        }
    }

    @Test func aCertificateWithoutTheExpectedNameIsRefusedOnceNamingWhy() async throws {
        try await DaemonLab.with(tls: .valid) { lab, tls in
            let failures = try await refusedRegistrations(
                lab, user: "tlsname", caFile: tls.caFile, serverName: "other.test")
            #expect(failures.count == 1, "a permanent failure is not retried: \(failures)")
            #expect(failures.first?.error?.contains("does not name other.test") == true, "\(failures)")
        }
    }

    @Test func aRegistrarAskingForAClientCertificateGetsTheConfiguredOne() async throws {
        try await DaemonLab.with(tls: .validRequiringClientCertificate) { lab, tls in
            let with = Self.account(caFile: tls.caFile, client: tls.clientCertificateLines)
            try await lab.startClient(
                user: "tlsclient", config: try lab.writeDaemonConfig(user: "tlsclient", transport: "tls", account: with)
            )
            try await lab.startClient(
                user: "tlsnocert",
                config: try lab.writeDaemonConfig(
                    user: "tlsnocert", transport: "tls", account: Self.account(caFile: tls.caFile)))
            #expect(await eventually(within: .seconds(30)) { !lab.lines("REGISTERED", user: "tlsclient").isEmpty })
            // Without one the registrar ends each connection (under TLS 1.3 after the client's side of
            // the handshake completed, so the client sees a lost flow, retried with backoff): never bound.
            try await Task.sleep(for: .seconds(3))
            #expect(lab.lines("REGISTERED", user: "tlsnocert").isEmpty, "\(lab.actionLog(of: "tlsnocert"))")
        }
    }
}
