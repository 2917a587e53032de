import CFuzzerDriver
import SIPPlugin

/// libFuzzer target: the input is a TCP byte stream; its first byte chooses how the stream is cut
/// into reads (every `1 + byte % 64` bytes), the rest is the stream.
///
/// Checks, besides "never traps": the frames cut from the stream, and whether it broke framing,
/// do not depend on how it was split into reads.
func fuzzSIPFramer(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let stream = Array(bytes.dropFirst())
    let whole = StreamCut(stream, readSize: max(stream.count, 1))
    let pieces = StreamCut(stream, readSize: 1 + Int(first % 64))
    guard whole == pieces else { fatalError("framing depends on read boundaries: \(whole) vs \(pieces)") }
    return
}

/// What a framer makes of a stream delivered in reads of `readSize` bytes.
struct StreamCut: Equatable {
    var frames: [SIPStreamFramer.Frame] = []
    var broken = false

    init(_ stream: [UInt8], readSize: Int) {
        var buffered: [UInt8] = []
        var offset = 0
        reads: while offset < stream.count {
            let end = min(stream.count, offset + readSize)
            buffered += stream[offset..<end]
            offset = end
            // Each frame consumes at least one byte, so this loop ends within buffered.count rounds.
            while !buffered.isEmpty {
                let frame: SIPStreamFramer.Frame
                do {
                    frame = try SIPStreamFramer.next(buffered)
                } catch {
                    broken = true
                    break reads
                }
                switch frame {
                case .needMoreData: continue reads
                case .keepAlive(let consumed), .message(_, let consumed):
                    guard consumed > 0 else { fatalError("a frame consumed no bytes") }
                    buffered.removeFirst(consumed)
                }
                let normalized = Self.normalized(frame)
                if normalized != frames.last || normalized != .keepAlive(consumed: 0) { frames.append(normalized) }
            }
        }
    }

    /// Reads may cut a run of CRLFs into several keep-alive frames; a run counts as one.
    static func normalized(_ frame: SIPStreamFramer.Frame) -> SIPStreamFramer.Frame {
        if case .keepAlive = frame { return .keepAlive(consumed: 0) }
        return frame
    }
}

cfuzzer_run(CommandLine.argc, CommandLine.unsafeArgv) { data, size in
    fuzzSIPFramer(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
