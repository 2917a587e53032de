public import ResiliencePolicyFile

extension PolicyFileError {
    /// Traps unless this rejection of `input` names `file` and a line and column inside the input
    /// (by `\n` lines, as an editor shows it) and says what was wrong and what was expected there,
    /// as `GarbledPolicyTests` demands of random input. The YAML fuzz targets share this check.
    public func requireLocated(in input: some Collection<UInt8>, file: String) {
        let lines = input.count(where: { $0 == UInt8(ascii: "\n") }) + 1
        guard self.file == file, (1...lines).contains(line), column >= 1, !message.isEmpty, !expected.isEmpty
        else {
            fatalError("rejection outside the input (\(lines) lines): \(self)")
        }
    }
}
