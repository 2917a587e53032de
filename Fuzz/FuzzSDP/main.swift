import CFuzzerDriver
import SIPPlugin

/// libFuzzer target: the input is an SDP body (RFC 8866) as it arrives in an INVITE or answer.
///
/// Checks, besides "never traps": an accepted description survives its own serialization
/// (parse → serialize → parse gives an equal value), since offers and answers are rewritten
/// and sent back.
func fuzzSDP(_ bytes: [UInt8]) {
    guard let sdp = try? SessionDescription.parse(bytes) else { return }
    let again: SessionDescription
    do {
        again = try SessionDescription.parse(sdp.serialized())
    } catch {
        fatalError("an accepted description does not parse after serialization: \(error)")
    }
    guard again == sdp else { fatalError("serialization changed the description") }
}

cfuzzer_run(CommandLine.argc, CommandLine.unsafeArgv) { data, size in
    fuzzSDP(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
