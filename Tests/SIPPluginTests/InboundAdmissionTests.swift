import Synchronization
import Testing

@testable import SIPPlugin

/// The server-transaction table's door (issue 25): a full table answers at once (486 to an
/// INVITE, 503 with Retry-After otherwise), strangers and storms within one dialog are
/// rate-limited with 503 and Retry-After, and a slot that frees takes a new call again.
@Suite(.timeLimit(.minutes(3)))
struct InboundAdmissionTests {
    static let timers = SIPTimers()
    /// A door that never limits, to look at the capacity alone.
    static let open = InboundAdmission.Settings(
        strangerRate: 1e6, strangerBurst: 1e6, dialogRate: 1e6, dialogBurst: 1e6)

    static func invite(_ index: Int) -> SIPMessage {
        peerRequest("INVITE", branch: "z9hG4bKforged\(index)", callID: "forged-\(index)")
    }

    /// RFC 3261 §21.4.24: "486 Busy Here: The callee's end system was contacted successfully,
    /// but the callee is currently not willing or able to take additional calls at this end
    /// system."
    @Test func fiftyForgedInvitesAtTheCapAreAnswered486AtOnceAndACallRingsAgainWhenASlotFrees() throws {
        let table = ServerTransactionTable(timers: Self.timers, limit: 8, admission: Self.open)
        let now = ContinuousClock.now
        var ringing: [ServerTransaction] = []
        for index in 0..<8 {
            ringing.append(try #require(table.receive(Self.invite(index), reliable: false, at: now) { _ in }.opened))
        }
        var answers: [SIPMessage] = []
        for index in 8..<58 {
            if case .answered(let answer) = table.receive(Self.invite(index), reliable: false, at: now, reply: { _ in })
            {
                answers.append(answer)
            }
        }
        #expect(answers.count == 50, "every forged INVITE is answered before receive returns")
        #expect(answers.allSatisfy { $0.status == 486 && $0.tag(in: "To") != nil })
        #expect(table.count == 8, "nothing was opened for them")
        var options = peerRequest("OPTIONS", branch: "z9hG4bKoptions")
        options.headers.set("Call-ID", "options-1")
        guard case .answered(let busy) = table.receive(options, reliable: false, at: now, reply: { _ in }) else {
            Issue.record("an OPTIONS at the cap was not answered")
            return
        }
        #expect(busy.status == 503 && busy.headers["Retry-After"] == "5")

        // The caller can still cancel a ringing call at the cap: CANCEL has room of its own.
        var cancel = Self.invite(1)
        cancel.startLine = .request(method: "CANCEL", uri: "sip:alice@198.18.0.2:5060")
        cancel.headers.set("CSeq", "1 CANCEL")
        let cancelling = try #require(table.receive(cancel, reliable: false, at: now, reply: { _ in }).opened)
        #expect(table.cancel(cancel, at: now) != nil && table.inviteState(ringing[1].key) == .completed)
        cancelling.respond(cancel.makeResponse(status: 200, reason: "OK"), at: now)  // as TransactionLayer does

        // One ringing call is declined and ACKed: its slot frees, and the next call rings.
        ringing[0].respond(Self.invite(0).makeResponse(status: 486, reason: "Busy Here", toTag: "me"), at: now)
        var ack = Self.invite(0)
        ack.startLine = .request(method: "ACK", uri: "sip:alice@198.18.0.2:5060")
        ack.headers.set("CSeq", "1 ACK")
        #expect(table.acknowledge(ack, at: now) == .absorbed)
        let sent = SentLog()
        let legitimate = peerRequest("INVITE", branch: "z9hG4bKlegit", callID: "legit")
        #expect(table.receive(legitimate, reliable: false, at: now, reply: { sent.append($0) }).opened != nil)
        #expect(sent.statuses == [100], "the new call's transaction answers 100 Trying at once")
    }

    /// RFC 3261 §21.5.4: "503 Service Unavailable: The server is temporarily unable to process the
    /// request due to a temporary overloading or maintenance of the server. The server MAY
    /// indicate when the client should retry the request in a Retry-After header field."
    @Test func strangersOpenNoMoreThanTheBurstThenTheRateAndAreTold503WithRetryAfter() throws {
        let table = ServerTransactionTable(timers: Self.timers)
        let start = ContinuousClock.now
        var opened = 0
        var refused: [SIPMessage] = []
        for index in 0..<50 {
            switch table.receive(Self.invite(index), reliable: false, at: start, reply: { _ in }) {
            case .new: opened += 1
            case .answered(let answer): refused.append(answer)
            default: Issue.record("INVITE \(index) was neither opened nor answered")
            }
        }
        let settings = InboundAdmission.Settings()
        #expect(opened == Int(settings.strangerBurst) && refused.count == 50 - opened)
        #expect(refused.allSatisfy { $0.status == 503 && Int($0.headers["Retry-After"] ?? "") ?? 0 >= 1 })
        // A retransmission of an opened INVITE is still answered from its transaction.
        #expect(table.receive(Self.invite(0), reliable: false, at: start, reply: { _ in }).answered != nil)
        // One second later the bucket holds `strangerRate` new tokens, and no more.
        var later = 0
        for index in 100..<150 {
            if table.receive(Self.invite(index), reliable: false, at: start + .seconds(1), reply: { _ in }).opened
                != nil
            {
                later += 1
            }
        }
        #expect(later == Int(settings.strangerRate))
    }

    @Test func aStormInOneDialogIsRefusedWhileOtherDialogsAndItsByeGetThrough() throws {
        var door = InboundAdmission()
        let now = ContinuousClock.now
        let reinvite = peerRequest("INVITE", callID: "storm", toTag: "ours")
        var verdicts: [InboundAdmission.Verdict] = []
        for _ in 0..<100 { verdicts.append(door.admit(reinvite, at: now)) }
        let admitted = verdicts.filter { $0 == .admit }.count
        #expect(admitted == Int(InboundAdmission.Settings().dialogBurst))
        #expect(verdicts.last == .tooFast(retryAfter: 1))
        #expect(door.admit(peerRequest("BYE", callID: "storm", toTag: "ours"), at: now) == .admit)
        #expect(door.admit(peerRequest("CANCEL", callID: "storm"), at: now) == .admit)
        #expect(door.admit(peerRequest("NOTIFY", callID: "calm", toTag: "ours"), at: now) == .admit)
    }

    @Test func forgedDialogKeysAreStrangersAndTheDialogBucketsStayBounded() {
        var door = InboundAdmission(settings: .init(strangerRate: 1e6, strangerBurst: 1e6, maximumDialogs: 16))
        let now = ContinuousClock.now
        for index in 0..<1_000 {
            _ = door.admit(peerRequest("NOTIFY", callID: "forged-\(index)", toTag: "t\(index)"), at: now)
        }
        #expect(door.dialogs.count == 16)
        var strict = InboundAdmission()
        let verdicts = (0..<100).map { strict.admit(peerRequest("NOTIFY", callID: "f\($0)", toTag: "t\($0)"), at: now) }
        #expect(verdicts.filter { $0 == .admit }.count == Int(InboundAdmission.Settings().strangerBurst))
    }
}

/// Responses a transaction sent, for assertions.
final class SentLog: Sendable {
    private let messages = Mutex<[SIPMessage]>([])
    var statuses: [Int] { messages.withLock { $0.compactMap(\.status) } }
    func append(_ message: SIPMessage) { messages.withLock { $0.append(message) } }
}
