import NIOCore
import NIOTestUtils
import Testing

@testable import SIPPlugin

/// The stream decoder, checked by NIO's verifier (every split of the input, byte by byte, all at
/// once) and on its own for the errors that close a connection.
struct SIPFrameDecoderTests {
    static let ok = "SIP/2.0 200 OK\r\nVia: SIP/2.0/TCP h;branch=z9hG4bK1\r\nCSeq: 2 REGISTER\r\nl: 3\r\n\r\nabc"
    static let notify =
        "NOTIFY sip:a@h SIP/2.0\nVia: SIP/2.0/TCP p;branch=z9hG4bK2\nCSeq: 7 NOTIFY\nContent-Length: 0\n\n"

    static func message(_ text: String) throws -> SIPMessage { try SIPParser.parse(datagram: Array(text.utf8)) }

    @Test func theVerifierSeesTheSameFramesHoweverTheStreamIsSplit() throws {
        let ok = try Self.message(Self.ok)
        let notify = try Self.message(Self.notify)
        try ByteToMessageDecoderVerifier.verifyDecoder(
            stringInputOutputPairs: [
                (Self.ok, [.message(ok)]),
                (Self.notify, [.message(notify)]),
                ("\r\n", [.pong]),
                ("\r\n\r\n" + Self.ok, [.pong, .pong, .message(ok)]),
                (Self.ok + Self.notify, [.message(ok), .message(notify)]),
            ],
            decoderFactory: { SIPFrameDecoder() })
    }

    /// What the decoder makes of `stream` delivered in reads of `readSize` bytes: its frames, and
    /// whether the stream broke framing (bounded: each frame consumes at least one byte).
    static func cut(_ stream: [UInt8], readSize: Int) -> (frames: [SIPStreamFrame], broken: Bool) {
        var decoder = SIPFrameDecoder()
        var buffer = ByteBuffer()
        var frames: [SIPStreamFrame] = []
        for start in stride(from: 0, to: stream.count, by: max(1, readSize)) {
            buffer.writeBytes(stream[start..<min(stream.count, start + max(1, readSize))])
            for _ in 0...buffer.readableBytes {
                do {
                    guard let frame = try decoder.decode(buffer: &buffer) else { break }
                    frames.append(frame)
                } catch {
                    return (frames, true)
                }
            }
        }
        return (frames, false)
    }

    /// Mutated streams of messages and CRLFs: the frames and the verdict are the same whether
    /// the stream arrives whole or in reads of 1 to 64 bytes.
    @Test func framesDoNotDependOnReadBoundariesForMutatedStreams() {
        var generator = SystemRandomNumberGenerator()
        let seed = Array(("\r\n" + Self.ok + "\r\n\r\n" + Self.notify + Self.ok).utf8)
        for _ in 0..<500 {
            var stream = seed
            for _ in 0..<Int.random(in: 0...3, using: &generator) {
                let byte: UInt8 = [10, 13, 48, 58, 32].randomElement(using: &generator)!
                stream[Int.random(in: 0..<stream.count, using: &generator)] = byte
            }
            let whole = Self.cut(stream, readSize: stream.count)
            let pieces = Self.cut(stream, readSize: Int.random(in: 1...64, using: &generator))
            #expect(whole.frames == pieces.frames)
            #expect(whole.broken == pieces.broken)
        }
    }

    @Test func anIncompleteBodyWaitsAndTheHeadIsNotLost() throws {
        var decoder = SIPFrameDecoder()
        var buffer = ByteBuffer(string: String(Self.ok.dropLast()))
        #expect(try decoder.decode(buffer: &buffer) == nil)
        #expect(try decoder.decode(buffer: &buffer) == nil)
        buffer.writeString("c")
        #expect(try decoder.decode(buffer: &buffer) == .message(try Self.message(Self.ok)))
        #expect(buffer.readableBytes == 0)
    }

    @Test func missingContentLengthOnAStreamIsAnError() {
        var decoder = SIPFrameDecoder()
        var buffer = ByteBuffer(string: "SIP/2.0 200 OK\r\nCSeq: 1 REGISTER\r\n\r\n")
        #expect(throws: SIPParseError.self) { try decoder.decode(buffer: &buffer) }
    }

    @Test func endlessHeadersAreAnErrorNotAStall() throws {
        var decoder = SIPFrameDecoder()
        var buffer = ByteBuffer(string: "SIP/2.0 200 OK\r\n")
        var thrown = false
        // Fed in reads of 4 KiB: the scan resumes, and gives up past 64 KiB.
        for _ in 0..<20 where !thrown {
            buffer.writeRepeatingByte(UInt8(ascii: "x"), count: 4_096)
            do { _ = try decoder.decode(buffer: &buffer) } catch { thrown = true }
        }
        #expect(thrown)
    }

    @Test(arguments: ["Content-Length: 9223372036854775807", "Content-Length: -1", "Content-Length: 70000"])
    func anOutOfRangeContentLengthIsAnError(header: String) {
        var decoder = SIPFrameDecoder()
        var buffer = ByteBuffer(string: "SIP/2.0 200 OK\r\nCSeq: 1 REGISTER\r\n\(header)\r\n\r\n")
        #expect(throws: SIPParseError.self) { try decoder.decode(buffer: &buffer) }
    }

    @Test func aLoneCRBeforeAMessageIsDroppedAndAPongCounted() throws {
        var decoder = SIPFrameDecoder()
        var buffer = ByteBuffer(string: "\r\r\n\n" + Self.notify)
        #expect(try decoder.decode(buffer: &buffer) == .pong)
        #expect(try decoder.decode(buffer: &buffer) == .pong)
        #expect(try decoder.decode(buffer: &buffer) == .message(try Self.message(Self.notify)))
    }
}
