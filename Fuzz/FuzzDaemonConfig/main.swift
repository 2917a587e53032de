import CFuzzerDriver
import FuzzSupport
import ResilienceDaemon
import ResiliencePolicyFile

/// libFuzzer target: the input is the text of a `netres run --config` file.
///
/// Relative paths in it (password, token and policy files) resolve against a directory that does
/// not exist, so those lookups fail; absolute ones are looked up as written (the reader has no
/// file-system seam).
/// Checks, besides "never traps": every rejection is located inside the input
/// (`PolicyFileError.requireLocated(in:file:)`).
func fuzzDaemonConfig(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    do {
        _ = try DaemonConfigFile.parse(text, file: "fuzz.yaml", directory: "/nonexistent-netres-fuzz")
    } catch {
        error.requireLocated(in: text.utf8, file: "fuzz.yaml")
    }
}

cfuzzer_run(CommandLine.argc, CommandLine.unsafeArgv) { data, size in
    fuzzDaemonConfig(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
