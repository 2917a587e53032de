import CFuzzerDriver
import FuzzSupport
import ResiliencePolicyFile

/// libFuzzer target: the input is the bytes of a policy file (`netres policy check FILE`).
///
/// Checks, besides "never traps": every rejection is located inside the input
/// (`PolicyFileError.requireLocated(in:file:)`).
func fuzzPolicyFile(_ bytes: [UInt8]) {
    do {
        _ = try PolicyFile.parse(bytes, file: "fuzz.yaml")
    } catch {
        error.requireLocated(in: bytes, file: "fuzz.yaml")
    }
}

cfuzzer_run(CommandLine.argc, CommandLine.unsafeArgv) { data, size in
    fuzzPolicyFile(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
