import ResiliencePolicyFile

extension LabStep {
    /// The words of a step with their character offsets; at most 64 words are read.
    struct Words {
        private var words: [(text: String, offset: Int)] = []
        private var index = 0
        private let length: Int

        init(_ text: String) {
            length = text.count
            var offset = 0
            var current = ""
            var start = 0
            for character in text {
                if character == " " || character == "\t" {
                    if !current.isEmpty { words.append((current, start)) }
                    current = ""
                } else {
                    if current.isEmpty { start = offset }
                    current.append(character)
                }
                offset += 1
                if words.count >= 64 { break }
            }
            if !current.isEmpty && words.count < 64 { words.append((current, start)) }
        }

        var peek: String? { index < words.count ? words[index].text : nil }
        mutating func advance() { index += 1 }

        func problem(_ message: String, expected: String) -> Problem {
            Problem(offset: index < words.count ? words[index].offset : length, message: message, expected: expected)
        }

        /// A duration word (`500ms`, `2s`), 0 to 10 minutes.
        mutating func duration(_ what: String) throws(Problem) -> Duration {
            let word = peek ?? ""
            guard let value = LocatedYAML.parseDuration(word), value >= .zero, value <= .seconds(600) else {
                throw problem(
                    word.isEmpty ? "missing \(what)" : "\"\(word.prefix(40))\" is not a duration up to 10m",
                    expected: what)
            }
            advance()
            return value
        }

        mutating func integer(in range: ClosedRange<Int>, _ what: String) throws(Problem) -> Int {
            let word = peek ?? ""
            guard word.count <= 12, let value = Int(word), range.contains(value) else {
                throw problem(
                    word.isEmpty ? "missing \(what)" : "\"\(word.prefix(40))\" is not \(what)", expected: what)
            }
            advance()
            return value
        }

        /// `30%`.
        mutating func percent(in range: ClosedRange<Int>) throws(Problem) -> Int {
            let word = peek ?? ""
            guard word.hasSuffix("%"), word.count <= 5, let value = Int(word.dropLast()), range.contains(value) else {
                throw problem(
                    "\"\(word.prefix(40))\" is not a percentage",
                    expected: "a percentage \(range.lowerBound)%-\(range.upperBound)%")
            }
            advance()
            return value
        }

        /// `64kbit`, `2mbit`, `8000bit`: 8 kbit/s to 10 Gbit/s.
        mutating func rate() throws(Problem) -> Int {
            let word = peek ?? ""
            let units: [(String, Int)] = [("gbit", 1_000_000_000), ("mbit", 1_000_000), ("kbit", 1000), ("bit", 1)]
            for (unit, scale) in units where word.hasSuffix(unit) {
                let digits = word.dropLast(unit.count)
                if digits.count <= 10, let value = Int(digits), (8_000...10_000_000_000).contains(value * scale) {
                    advance()
                    return value * scale
                }
                break
            }
            throw problem("\"\(word.prefix(40))\" is not a rate", expected: "a rate from 8kbit to 10gbit, e.g. 64kbit")
        }

        /// One of `names`.
        mutating func name(in names: [String]) throws(Problem) -> String {
            let word = peek ?? ""
            guard names.contains(word) else {
                throw problem("unknown link \"\(word.prefix(40))\"", expected: names.joined(separator: ", "))
            }
            advance()
            return word
        }

        /// An interface name: 1-15 ASCII letters or digits.
        mutating func interfaceName() throws(Problem) -> String {
            let word = peek ?? ""
            guard (1...15).contains(word.count), word.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw problem("\"\(word.prefix(40))\" is not an interface name", expected: "1-15 letters or digits")
            }
            advance()
            return word
        }

        /// The word `keyword`, then what `read` reads.
        mutating func keyword<T>(_ keyword: String, then read: (inout Words) throws(Problem) -> T) throws(Problem) -> T
        {
            guard peek == keyword else {
                throw problem(
                    peek.map { "expected \"\(keyword)\", found \"\($0.prefix(40))\"" } ?? "missing \"\(keyword)\"",
                    expected: "\"\(keyword)\" and its value")
            }
            advance()
            return try read(&self)
        }
    }
}
