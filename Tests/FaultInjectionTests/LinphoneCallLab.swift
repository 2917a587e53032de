import Foundation
import NetworkLab
import Testing

/// ``CallFaultLab`` (the built `netres run` as alice in host `phone`, Kamailio in host `server`)
/// plus two Debian linphonec 5.1 (``LabLinphone``) in a host `far`, linked to the server by `lan`:
/// `dave` answers at once (`-a`, netres calls him), `erin` calls alice. Faults act on the phone's
/// `wifi` only, so the phones never see them. Kamailio record-routes the INVITEs or not
/// (``RegistrarOptions/recordRoute``); linphonec keeps its GRUU on, so its Contact is a GRUU of
/// the registrar's and netres's in-dialog requests to it pass the registrar's `route[GRUU]` either
/// way (`NRTEST GRUU` lines).
///
/// Invariant: the lab owns every process here (netres, Kamailio, both linphonec): `withNetworkLab`
/// removes them with the namespaces, even when a check fails.
struct LinphoneCallLab {
    let calls: CallFaultLab
    let far: LabHost
    /// Answers every call at once (`-a`).
    let dave: LabLinphone
    /// Calls alice (`call`).
    let erin: LabLinphone

    var lab: NetworkLab { calls.lab }
    var registrar: LabRegistrar { calls.registrar }

    init(_ lab: NetworkLab, recordRoute: Bool) async throws {
        calls = try await CallFaultLab(lab, options: RegistrarOptions(recordRoute: recordRoute))
        far = try await lab.addHost("far")
        _ = try await lab.connect(far, to: calls.server, as: "lan")
        dave = try await lab.startLinphone(
            in: far, user: "dave", registrar: calls.registrar, port: 5064, autoAnswer: true)
        erin = try await lab.startLinphone(in: far, user: "erin", registrar: calls.registrar, port: 5066)
    }

    /// erin calls alice, netres lists the ringing call and it is answered with `netres ctl
    /// answer`; up once erin prints that it is connected. The call's id, or nil (issue recorded).
    func erinCallsAlice() async throws -> String? {
        try erin.call("sip:\(CallFaultLab.user)@\(registrar.address)")
        let (id, reply) = await calls.answerIncomingCall(from: erin.diagnostics())
        guard let ringing = id else { return nil }
        let up = await eventually(within: .seconds(15)) { Self.connected(erin) }
        #expect(up, "erin's call to alice: ctl answer: \(reply); \(erin.diagnostics()); netres: \(calls.log())")
        return up ? ringing : nil
    }

    /// alice calls dave with `netres ctl call`; up once dave prints that it is connected. Its
    /// id as `ctl calls` reports it, or nil (issue recorded).
    func aliceCallsDave() async -> String? {
        let uri = "sip:\(dave.user)@\(registrar.address)"
        let reply = (try? await calls.ctl("call", CallFaultLab.user, uri)) ?? "no reply"
        let up = await eventually(within: .seconds(15)) { Self.connected(dave) }
        let words = reply.split(whereSeparator: \.isWhitespace)
        let placed = up && words.count == 3 && words[0] == "ok"
        #expect(placed, "alice's call to dave: ctl call: \(reply); \(dave.diagnostics()); netres: \(calls.log())")
        return placed ? String(words[2]) : nil
    }

    /// The in-dialog requests with `method` that user `from` sent and Kamailio relayed through
    /// `route[GRUU]` (to the contact bound to a GRUU).
    func throughGRUU(_ method: String, from: String) -> [RegistrarRequest] {
        registrar.requests().filter { $0.kind == "GRUU" && $0.fields["method"] == method && $0.user == from }
    }

    /// The `method` requests user `from` sent that reached Kamailio (From user and method as it logged them).
    func atProxy(_ method: String, from: String) -> [RegistrarRequest] {
        registrar.requests().filter { $0.kind == method && $0.user == from }
    }

    /// The call events netres logged for call `id` (`call PHASE ACCOUNT.call.ID … trigger=…`), in order.
    func events(of id: String) -> [String] {
        calls.log(limit: 200_000).split(separator: "\n").map(String.init).filter { $0.contains(".call.\(id) ") }
    }

    /// For a failure message: the BYE requests and replies Kamailio logged (user, source, Call-ID).
    func byes() -> [String] {
        registrar.requests().filter { $0.kind == "BYE" || $0.fields["method"] == "BYE" }.map {
            "\($0.kind) \($0.user) src=\($0.fields["src"] ?? "-") callid=\($0.fields["callid"] ?? "?")"
        }
    }

    /// Whether `phone` printed "Call N with … connected." (its call was answered and ACKed).
    static func connected(_ phone: LabLinphone) -> Bool {
        phone.callLines().contains { $0.hasSuffix(" connected.") }
    }

    /// Whether `phone` printed that its call ended normally ("… ended (No error).").
    static func ended(_ phone: LabLinphone) -> Bool {
        phone.callLines().contains { $0.contains(" ended (No error)") }
    }
}
