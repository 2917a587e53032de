import ChildProcesses
import Foundation
import Testing

/// `netres run` with a `transport: tls` account against Kamailio's tls module (5061), with
/// certificates the lab generates: it registers and subscribes over TLS, survives a flap and an
/// address change, and a certificate it must not trust (wrong CA, expired) fails once, clearly
/// and permanently, without a retry storm and without a REGISTER reaching the registrar.
@Suite(
    .serialized, .needsNamespaces,
    .enabled(if: RegistrarLab.isInstalled && RegistrarTLS.isInstalled, "needs kamailio (tls module) and openssl"),
    .timeLimit(.minutes(1)))
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
        let lab = try await RegistrarLab.running(tls: .valid)
        defer { lab.stop() }
        let caFile = try #require(lab.tls?.caFile)
        try lab.startClient(
            user: user,
            config: try lab.writeDaemonConfig(
                user: user, transport: "tls", account: Self.account(caFile: caFile, subscriptions: true)))
        #expect(
            await waitUntil(seconds: 10) { !lab.lines("REGISTERED", user: user).isEmpty }, "\(lab.actionLog(of: user))")
        #expect(lab.lines("REGISTER", user: user).allSatisfy { $0.fields["proto"] == "tls" })
        #expect(lab.lines("REGISTERED", user: user).first?.contact.contains("transport=tls") == true)
        let subscribed = await waitUntil(seconds: 10) {
            lab.actionLog(of: user).contains { $0.service == "\(user).subscription.reg" && $0.outcome == "succeeded" }
        }
        #expect(subscribed, "\(lab.actionLog(of: user))")
        #expect(lab.lines("SUBSCRIBE", user: user).contains { $0.fields["proto"] == "tls" })

        let (downAt, upAt) = try await lab.flapClientLink()
        #expect(lab.lines("REGISTER", user: user).filter { $0.at > downAt && $0.at < upAt }.isEmpty)
        #expect(
            await waitUntil(seconds: 5) { lab.lines("REGISTERED", user: user).contains { $0.at > upAt } },
            "a new TLS flow (handshake included) re-registered after the flap")

        try lab.client.batch([
            "addr add 198.18.0.3/24 dev nrc0", "addr del 198.18.0.2/24 dev nrc0",
            "route replace default via 198.18.0.1",
        ])
        let moved = await waitUntil(seconds: 5) {
            lab.lines("REGISTERED", user: user).contains { $0.contact.contains("@198.18.0.3") }
        }
        let output = (try? String(contentsOfFile: lab.clientOutput(of: user), encoding: .utf8)) ?? ""
        #expect(moved, "REGISTERED: \(lab.lines("REGISTERED", user: user).map(\.contact)); \(output.suffix(3000))")
        #expect(lab.lines("REGISTER", user: user).allSatisfy { $0.fields["proto"] == "tls" })
    }

    /// Starts `user` with `caFile` against `lab` and returns its register actions after 4 s.
    func refusedRegistrations(
        _ lab: RegistrarLab, user: String, caFile: String, serverName: String = RegistrarTLS.serverName
    ) async throws -> [RegistrarLab.ActionLine] {
        let account = Self.account(caFile: caFile, serverName: serverName)
        try lab.startClient(
            user: user, config: try lab.writeDaemonConfig(user: user, transport: "tls", account: account))
        let failed = await waitUntil(seconds: 10) {
            lab.actionLog(of: user).contains { $0.action == "register" && $0.outcome == "failed" }
        }
        #expect(failed, "\(lab.actionLog(of: user))")
        // Long enough for several retries, had the failure been retryable (backoff starts at 1 s).
        try await Task.sleep(for: .seconds(4))
        #expect(lab.lines("REGISTER", user: user).isEmpty, "no REGISTER crossed a refused TLS flow")
        return lab.actionLog(of: user).filter { $0.action == "register" && $0.outcome == "failed" }
    }

    @Test func aCertificateFromAnotherCAIsRefusedOnceNamingWhy() async throws {
        let lab = try await RegistrarLab.running(tls: .valid)
        defer { lab.stop() }
        let failures = try await refusedRegistrations(
            lab, user: "tlswrongca", caFile: try #require(lab.tls?.otherCAFile))
        #expect(failures.count == 1, "a permanent failure is not retried: \(failures)")
        let error = failures.first?.error ?? ""
        #expect(error.contains("not signed by a trusted CA") && error.contains("other-ca.pem"), "\(error)")
    }

    @Test func anExpiredCertificateIsRefusedOnceNamingWhy() async throws {
        let lab = try await RegistrarLab.running(tls: .expired)
        defer { lab.stop() }
        let failures = try await refusedRegistrations(lab, user: "tlsexpired", caFile: try #require(lab.tls?.caFile))
        #expect(failures.count == 1, "a permanent failure is not retried: \(failures)")
        #expect(failures.first?.error?.contains("certificate expired on") == true, "\(failures)")
    }

    @Test func aCertificateWithoutTheExpectedNameIsRefusedOnceNamingWhy() async throws {
        let lab = try await RegistrarLab.running(tls: .valid)
        defer { lab.stop() }
        let failures = try await refusedRegistrations(
            lab, user: "tlsname", caFile: try #require(lab.tls?.caFile), serverName: "other.test")
        #expect(failures.count == 1, "a permanent failure is not retried: \(failures)")
        #expect(failures.first?.error?.contains("does not name other.test") == true, "\(failures)")
    }

    @Test func aRegistrarAskingForAClientCertificateGetsTheConfiguredOne() async throws {
        let lab = try await RegistrarLab.running(tls: .validRequiringClientCertificate)
        defer { lab.stop() }
        let tls = try #require(lab.tls)
        let with = Self.account(caFile: tls.caFile, client: tls.clientCertificateLines)
        try lab.startClient(
            user: "tlsclient", config: try lab.writeDaemonConfig(user: "tlsclient", transport: "tls", account: with))
        try lab.startClient(
            user: "tlsnocert",
            config: try lab.writeDaemonConfig(
                user: "tlsnocert", transport: "tls", account: Self.account(caFile: tls.caFile)))
        #expect(await waitUntil(seconds: 10) { !lab.lines("REGISTERED", user: "tlsclient").isEmpty })
        // Without one the registrar ends each connection (under TLS 1.3 after the client's side of
        // the handshake completed, so the client sees a lost flow, retried with backoff): never bound.
        try await Task.sleep(for: .seconds(3))
        #expect(lab.lines("REGISTERED", user: "tlsnocert").isEmpty, "\(lab.actionLog(of: "tlsnocert"))")
    }
}
