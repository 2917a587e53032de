import NIOCore
import Testing

@testable import SIPPlugin

/// The pure parts of the Contact listeners: the rate a listener admits requests at, and how a
/// request's top Via is marked and its UDP answer addressed (RFC 3261 §18.2, RFC 3581).
struct ContactAdmissionTests {
    let start = ContinuousClock.now

    @Test func aBurstIsAdmittedThenOnlyTheRateGetsThrough() {
        var admission = ContactAdmission(rate: 10, burst: 5)
        let burst = (0..<20).filter { _ in admission.admit(at: start) }.count
        #expect(burst == 5)
        // One second later: ten more tokens, never more than the burst.
        let afterASecond = (0..<20).filter { _ in admission.admit(at: start + .seconds(1)) }.count
        #expect(afterASecond == 5)
        let afterATenth = (0..<20).filter { _ in admission.admit(at: start + .milliseconds(1_100)) }.count
        #expect(afterATenth == 1)
    }

    /// The verdicts for requests at `instants`, in order.
    static func verdicts(_ admission: inout ContactAdmission, at instants: [ContinuousClock.Instant]) -> [Bool] {
        instants.map { admission.admit(at: $0) }
    }

    /// A flood through the Contact alone never fills an account's server transactions: each
    /// admitted UDP request is held for timer J (64×T1) after its answer.
    @Test func theDefaultRateCannotFillTheServerTransactionTable() {
        let admission = ContactAdmission()
        let held = SIPTimers().transactionTimeout / .seconds(1)
        #expect(Double(admission.burst) + Double(admission.rate) * held < Double(ServerTransactionTable.capacity))
    }

    @Test func aClockGoingBackwardsAdmitsNothingExtra() {
        var admission = ContactAdmission(rate: 100, burst: 1)
        let later = start + .seconds(5)
        let verdicts = Self.verdicts(&admission, at: [later, start, later, later + .milliseconds(10)])
        #expect(verdicts == [true, false, false, true])
    }

    @Test func nonsenseSettingsAreClampedToOne() {
        var admission = ContactAdmission(rate: -3, burst: 0)
        #expect(admission.rate == 1 && admission.burst == 1)
        #expect(Self.verdicts(&admission, at: [start, start]) == [true, false])
    }

    /// Responses take the bucket too, and go on unmarked: the answers to the requests of a dialog
    /// with no route set come back from the remote target to the Contact (RFC 3261 §12.2.1.1).
    @Test func aGateKeepsOneBucketPerAccountAndLetsResponsesThroughUnmarked() throws {
        let gate = ContactGate(log: ThrottledLog(logger: testLogger("gate"), clock: ContinuousClock()))
        let source = try SocketAddress(ipAddress: "198.18.0.7", port: 5060)
        let options = request(via: "SIP/2.0/UDP 198.18.0.7:5060;branch=z9hG4bK1")
        let started = ContinuousClock.now
        let alice = (0..<200).filter { _ in gate.admit(options, from: source, for: "alice") != nil }.count
        let elapsed = (ContinuousClock.now - started) / .seconds(1)
        let settings = ContactAdmission()
        #expect(alice >= settings.burst && alice <= settings.burst + Int(elapsed * Double(settings.rate)) + 1)
        #expect(gate.admit(options, from: source, for: "bob") != nil, "bob's bucket is his own")
        let response = options.makeResponse(status: 200, reason: "OK")
        #expect(gate.admit(response, from: source, for: "bob") == response)
        #expect(gate.admit(response, from: source, for: "alice") == nil, "alice's bucket is empty")
        #expect(gate.refused == 200 - alice + 1)
    }

    func request(via: String) -> SIPMessage {
        var request = SIPMessage.request("OPTIONS", uri: "sip:alice@198.18.0.2:5080")
        request.headers.add("Via", via)
        request.headers.add("Via", "SIP/2.0/UDP 198.18.0.9:5060;branch=z9hG4bKbelow")
        request.headers.add("Call-ID", "c")
        return request
    }

    /// RFC 3261 §18.2.1: "If the host portion of the "sent-by" parameter contains a domain name,
    /// or if it contains an IP address that differs from the packet source address, the server
    /// MUST add a "received" parameter to that Via header field value."
    @Test func aSentByOtherThanTheSourceGetsReceived() throws {
        let named = try #require(
            ReceivedVia.stamped(
                request(via: "SIP/2.0/UDP phone.example:5062;branch=z9hG4bK1"), sourceHost: "198.18.0.7",
                sourcePort: 40000))
        #expect(
            named.headers.values("Via") == [
                "SIP/2.0/UDP phone.example:5062;branch=z9hG4bK1;received=198.18.0.7",
                "SIP/2.0/UDP 198.18.0.9:5060;branch=z9hG4bKbelow",
            ])
        let same = try #require(
            ReceivedVia.stamped(
                request(via: "SIP/2.0/UDP 198.18.0.7:5062;branch=z9hG4bK1"), sourceHost: "198.18.0.7", sourcePort: 5062)
        )
        #expect(same.headers["Via"] == "SIP/2.0/UDP 198.18.0.7:5062;branch=z9hG4bK1")
    }

    /// RFC 3581 §4: "If this Via header field value contains an "rport" parameter with no value,
    /// it MUST set the value of the parameter to the source port of the request." A valued one
    /// (only a sender steering the answer writes it) is replaced by the source port too.
    @Test func anRportGetsTheSourcePort() throws {
        let stamped = try #require(
            ReceivedVia.stamped(
                request(via: "SIP/2.0/TCP [2001:db8::5]:5062;rport;branch=z9hG4bK1"), sourceHost: "2001:db8::5",
                sourcePort: 41000))
        #expect(stamped.headers["Via"] == "SIP/2.0/TCP [2001:db8::5]:5062;branch=z9hG4bK1;rport=41000")
        let given = try #require(
            ReceivedVia.stamped(
                request(via: "SIP/2.0/UDP 198.18.0.7;rport=9;branch=z9hG4bK1"), sourceHost: "198.18.0.7",
                sourcePort: 41000))
        #expect(given.headers["Via"] == "SIP/2.0/UDP 198.18.0.7;branch=z9hG4bK1;rport=41000")
    }

    /// RFC 3261 §18.2.1: the `received` parameter "MUST contain the source address from which the
    /// packet was received": one the sender wrote (a victim's address, or the client's own
    /// loopback) is dropped, never kept.
    @Test(arguments: [
        "SIP/2.0/UDP 198.18.0.7:5062;received=198.18.9.9;rport=53;branch=z9hG4bK1",
        "SIP/2.0/UDP 198.18.0.7:5062;branch=z9hG4bK1;RECEIVED=127.0.0.1;rport=5060;received=198.18.9.9",
    ])
    func aForgedReceivedIsReplacedByTheSource(via: String) throws {
        let stamped = try #require(
            ReceivedVia.stamped(request(via: via), sourceHost: "198.18.0.7", sourcePort: 40000))
        let top = try #require(stamped.headers.listValues("Via").first)
        #expect(top == "SIP/2.0/UDP 198.18.0.7:5062;branch=z9hG4bK1;rport=40000", "\(top)")
        let elsewhere = try #require(
            ReceivedVia.stamped(request(via: via), sourceHost: "198.18.0.8", sourcePort: 40000))
        let marked = try #require(elsewhere.headers.listValues("Via").first)
        #expect(marked.hasSuffix(";rport=40000;received=198.18.0.8") && !marked.contains("198.18.9.9"), "\(marked)")
        #expect(ReceivedVia.answerPort(of: elsewhere, sourcePort: 40000) == 40000)
    }

    @Test func aRequestWithoutAUsableViaIsRefused() {
        var request = SIPMessage.request("OPTIONS", uri: "sip:alice@198.18.0.2")
        #expect(ReceivedVia.stamped(request, sourceHost: "198.18.0.7", sourcePort: 1) == nil)
        request.headers.add("Via", "garbage")
        #expect(ReceivedVia.stamped(request, sourceHost: "198.18.0.7", sourcePort: 1) == nil)
    }

    /// RFC 3261 §18.2.2: "the response MUST be sent to the address in the "received" parameter,
    /// using the port indicated in the "sent-by" value, or using port 5060 if none is specified
    /// explicitly." RFC 3581 §4: "the response MUST be sent to the IP address listed in the
    /// "received" parameter, and the port in the "rport" parameter." The address is always the
    /// packet's source; only the port comes from the request.
    @Test(arguments: [
        ("SIP/2.0/UDP phone.example:5062;branch=z9hG4bK1", 5062),
        ("SIP/2.0/UDP phone.example;branch=z9hG4bK1", 5060),
        ("SIP/2.0/UDP 10.0.0.2:5062;rport;branch=z9hG4bK1", 40001),
        ("SIP/2.0/UDP 10.0.0.2:5062;rport=9;branch=z9hG4bK1", 40001),
        ("SIP/2.0/UDP [2001:db8::5]:5062;rport=41000;branch=z9hG4bK1", 40001),
        ("garbage", 40001),
    ])
    func theAnswerGoesToTheSourceAtThePortTheRFCsSay(via: String, port: Int) {
        let stamped =
            ReceivedVia.stamped(request(via: via), sourceHost: "198.18.0.7", sourcePort: 40001) ?? request(via: via)
        #expect(ReceivedVia.answerPort(of: stamped, sourcePort: 40001) == port)
    }
}
