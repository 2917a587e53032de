import Foundation
import Testing

@testable import NetworkLab

/// baresip's log and `ctrl_tcp` replies are read, never trusted: the trace parser keeps well-formed
/// messages in order and skips the rest; the netstring reader waits for a whole netstring and
/// refuses a length that is not a non-negative number.
struct BaresipTraceTests {
    static let trace =
        "baresip is ready.\n" + BaresipTrace.begin + "UDP 198.18.2.2:5060 -> 198.19.255.1:5060\n"
        + "INVITE sip:alice@198.19.255.1 SIP/2.0\r\nCSeq: 7 INVITE\r\n\r\n" + BaresipTrace.end + "\n"
        + "call: got re-INVITE\n[0:00:01] audio=64000/0 (bit/s)\r" + BaresipTrace.begin
        + "UDP 198.19.255.1:5060 -> 198.18.2.2:5060\nSIP/2.0 200 OK\r\nCSeq: 7 INVITE\r\n\r\n" + BaresipTrace.end
        + BaresipTrace.begin + "garbage without a route line" + BaresipTrace.end + BaresipTrace.begin
        + "UDP 198.18.2.2:5060 -> 198.19.255.1:5060\nACK sip:alice@198.19.255.1 SIP/2.0\r\n"

    @Test func theTraceYieldsEachWholeMessageInOrderWithItsDirection() {
        let messages = BaresipTrace.parse(log: Self.trace, own: "198.18.2.2:5060")
        #expect(messages.map(\.startLine) == ["INVITE sip:alice@198.19.255.1 SIP/2.0", "SIP/2.0 200 OK"])
        #expect(messages.map(\.sent) == [true, false])
        #expect(messages[1].header("CSeq") == "7 INVITE")
    }

    @Test func aPortAloneNamesThePhoneWhenItHasNoFixedAddress() {
        let messages = BaresipTrace.parse(log: Self.trace, own: ":5060")
        // Both ends use port 5060 here: with only a port, both count as the phone's own.
        #expect(messages.map(\.sent) == [true, true])
        #expect(BaresipTrace.parse(log: Self.trace, own: ":5064").map(\.sent) == [false, false])
    }

    @Test func theLogLinesLeaveOutTheTraceAndTheStatusLine() {
        let lines = BaresipTrace.logLines(Self.trace)
        #expect(lines.contains("baresip is ready."))
        #expect(lines.contains("call: got re-INVITE"))
        #expect(!lines.contains { $0.hasPrefix("INVITE") || $0.hasPrefix("[0:00") })
    }

    @Test func aNetstringIsReadOnlyWhenWholeAndWithASaneLength() throws {
        let whole = Data(#"17:{"response":true},5:{"a"},"#.utf8)
        let (first, rest) = try #require(BaresipControl.firstNetstring(whole))
        #expect(first["response"] as? Bool == true)
        #expect(String(decoding: rest, as: UTF8.self) == #"5:{"a"},"#)
        // Not a JSON object: an empty object, and the reader moves past it.
        #expect(BaresipControl.firstNetstring(rest).map { $0.0.isEmpty } == true)
        #expect(BaresipControl.firstNetstring(Data(#"17:{"response":tr"#.utf8)) == nil)
        #expect(BaresipControl.firstNetstring(Data("-5:abc,".utf8)) == nil)
        #expect(BaresipControl.firstNetstring(Data("12345678:{}".utf8)) == nil)
    }
}
