import CFuzzerDriver
import NIOCore
import SIPPlugin

/// libFuzzer target: the input is a TCP byte stream; its first byte chooses how the stream is cut
/// into reads (every `1 + byte % 64` bytes), the rest is the stream, fed to ``SIPFrameDecoder``.
///
/// Checks, besides "never traps": the frames cut from the stream, and whether it broke framing,
/// do not depend on how it was split into reads (the decoder's documented invariant; the
/// reference is the whole stream in one read), and every call either produces a frame, throws,
/// or waits for more bytes.
func fuzzSIPFramer(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let stream = Array(bytes.dropFirst())
    let whole = StreamCut(stream, readSize: max(stream.count, 1))
    let pieces = StreamCut(stream, readSize: 1 + Int(first % 64))
    guard whole == pieces else { fatalError("framing depends on read boundaries: \(whole) vs \(pieces)") }
}

/// What ``SIPFrameDecoder`` makes of a stream delivered in reads of `readSize` bytes.
struct StreamCut: Equatable {
    var frames: [SIPStreamFrame] = []
    var broken = false

    init(_ stream: [UInt8], readSize: Int) {
        var decoder = SIPFrameDecoder()
        var buffer = ByteBuffer()
        var offset = 0
        reads: while offset < stream.count {
            let end = min(stream.count, offset + readSize)
            buffer.writeBytes(stream[offset..<end])
            offset = end
            while true {
                let before = buffer.readerIndex
                let frame: SIPStreamFrame?
                do {
                    frame = try decoder.decode(buffer: &buffer)
                } catch {
                    broken = true
                    break reads
                }
                guard let frame else { continue reads }
                // A frame that consumed nothing would make NIO call decode forever.
                guard buffer.readerIndex > before else { fatalError("\(frame) consumed no bytes") }
                frames.append(frame)
            }
        }
    }
}

cfuzzer_run(CommandLine.argc, CommandLine.unsafeArgv) { data, size in
    fuzzSIPFramer(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
