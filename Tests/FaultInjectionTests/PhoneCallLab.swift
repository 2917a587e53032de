import Foundation
import NetworkLab
import Testing

/// ``CallFaultLab`` (the built `netres run` as alice in host `phone`, Kamailio in host `server`)
/// plus real phones: a host `far`, linked to the server by `lan`, running two Debian baresip 1.0
/// (``LabBaresip``): `bob` answers at once (netres calls him), `carol` calls alice. Faults act on
/// the phone's `wifi` only, so the phones never see them; every request between the parties goes
/// through Kamailio, which record-routes the INVITEs or not (``RegistrarOptions/recordRoute``).
///
/// Invariant: the lab owns every process here (netres, Kamailio, both baresip): `withNetworkLab`
/// removes them with the namespaces, even when a check fails.
struct PhoneCallLab {
    let calls: CallFaultLab
    let far: LabHost
    /// Answers every call at once (`;answermode=auto`).
    let bob: LabBaresip
    /// Dials alice through its `ctrl_tcp`.
    let carol: LabBaresip

    var lab: NetworkLab { calls.lab }
    var registrar: LabRegistrar { calls.registrar }
    /// alice's address of record: what carol dials.
    var alice: String { "sip:\(CallFaultLab.user)@\(registrar.address)" }

    init(_ lab: NetworkLab, recordRoute: Bool) async throws {
        calls = try await CallFaultLab(lab, options: RegistrarOptions(recordRoute: recordRoute))
        far = try await lab.addHost("far")
        let lan = try await lab.connect(far, to: calls.server, as: "lan")
        let address = await lab.addresses(of: lan).ipv4
        bob = try await lab.startBaresip(
            in: far, user: "bob", registrar: calls.registrar, address: address, port: 5060, controlPort: 4444,
            autoAnswer: true)
        carol = try await lab.startBaresip(
            in: far, user: "carol", registrar: calls.registrar, address: address, port: 5062, controlPort: 4445)
    }

    /// alice calls bob with `netres ctl call`; the call is up once bob has the ACK of his 200.
    /// Its id as `ctl calls` reports it, or nil (with an issue recorded) when it did not come up.
    func aliceCallsBob() async -> String? {
        let reply = (try? await calls.ctl("call", CallFaultLab.user, "sip:bob@\(registrar.address)")) ?? "no reply"
        let acked = await eventually(within: .seconds(15)) { !bob.received("ACK").isEmpty }
        let words = reply.split(whereSeparator: \.isWhitespace)
        let up = acked && words.count == 3 && words[0] == "ok"
        #expect(up, "alice's call to bob: ctl call: \(reply); \(bob.diagnostics()); netres: \(calls.log())")
        return up ? String(words[2]) : nil
    }

    /// carol dials alice, netres lists the ringing call and it is answered with `netres ctl answer`;
    /// up once carol has sent the ACK of that 200. The call's id, or nil (with an issue recorded).
    func carolCallsAlice() async throws -> String? {
        try await carol.dial(alice)
        let (id, reply) = await calls.answerIncomingCall(from: carol.diagnostics())
        guard let ringing = id else { return nil }
        let acked = await eventually(within: .seconds(15)) {
            carol.messages().contains { $0.sent && $0.method == "ACK" }
        }
        #expect(acked, "carol's call to alice: ctl answer: \(reply); \(carol.diagnostics()); netres: \(calls.log())")
        return acked ? ringing : nil
    }

    /// The INVITE (a re-INVITE, once the call is up) `phone` received and answered 200 among the
    /// messages it logged after the first `since`; nil when it answered none.
    static func answeredReinvite(_ phone: LabBaresip, since: Int) -> SIPpMessage? {
        let later = phone.messages().dropFirst(since)
        guard
            let answer = later.first(where: {
                $0.sent && $0.status == 200 && $0.header("CSeq")?.hasSuffix(" INVITE") == true
            })
        else { return nil }
        // The request it answers, for its Contact and SDP.
        return later.last {
            !$0.sent && $0.method == "INVITE" && $0.header("CSeq") == answer.header("CSeq")
        }
    }

    /// The requests of the call with `callID` that passed through Kamailio once it was up: every
    /// request Kamailio logged for that Call-ID after `established` (``realtime()``), and the ACK of
    /// the initial 2xx (the ACK with the CSeq of the last INVITE logged before then).
    func requestsThroughProxy(callID: String, after established: Double) -> [RegistrarRequest] {
        let call = registrar.requests().filter { !$0.isReply && $0.fields["callid"] == callID }
        let initial = call.last { $0.kind == "INVITE" && $0.at <= established }?.fields["cseq"]
        return call.filter { $0.at > established || ($0.kind == "ACK" && $0.fields["cseq"] == initial) }
    }

    /// The Call-ID of the call `phone` took part in (the first INVITE it sent or received).
    static func callID(_ phone: LabBaresip) -> String {
        phone.messages().first { $0.method == "INVITE" }?.header("Call-ID") ?? "?"
    }

    /// The BYE requests `phone` sent or received so far.
    static func byes(_ phone: LabBaresip) -> [SIPpMessage] { phone.messages().filter { $0.method == "BYE" } }
}
