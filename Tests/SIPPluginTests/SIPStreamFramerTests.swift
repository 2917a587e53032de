import Testing

@testable import SIPPlugin

struct SIPStreamFramerTests {
    static let ok = "SIP/2.0 200 OK\r\nVia: SIP/2.0/TCP h;branch=z9hG4bK1\r\nCSeq: 2 REGISTER\r\nl: 3\r\n\r\nabc"

    @Test func messagesAreCutByContentLengthAcrossPartialReads() throws {
        let stream = Array((Self.ok + Self.ok).utf8)
        var buffer: [UInt8] = []
        var messages: [SIPMessage] = []
        for byte in stream {
            buffer.append(byte)
            while case .message(let message, let consumed) = try SIPStreamFramer.next(buffer) {
                messages.append(message)
                buffer.removeFirst(consumed)
            }
        }
        #expect(messages.count == 2)
        #expect(messages.allSatisfy { $0.body == Array("abc".utf8) })
        #expect(buffer.isEmpty)
    }

    @Test func keepAliveCRLFsAreSkipped() throws {
        #expect(try SIPStreamFramer.next(Array("\r\n\r\nSIP".utf8)) == .keepAlive(consumed: 4))
    }

    @Test func missingContentLengthOnAStreamIsAnError() {
        let text = "SIP/2.0 200 OK\r\nCSeq: 1 REGISTER\r\n\r\n"
        #expect(throws: SIPParseError.self) { try SIPStreamFramer.next(Array(text.utf8)) }
    }

    @Test func endlessHeadersAreAnErrorNotAStall() {
        let bytes = Array("SIP/2.0 200 OK\r\n".utf8) + Array(repeating: UInt8(ascii: "x"), count: 70_000)
        #expect(throws: SIPParseError.self) { try SIPStreamFramer.next(bytes) }
    }

    @Test func incompleteBodyWaitsForMoreData() throws {
        let bytes = Array(Self.ok.utf8.dropLast())
        #expect(try SIPStreamFramer.next(bytes) == .needMoreData)
    }
}
