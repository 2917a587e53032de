internal import Foundation
import ResilienceCore

extension ExternalPluginMessage {
    /// Typed, bounded access to one parsed JSON object; every error names its field.
    struct Fields {
        let object: [String: Any]

        init(_ object: [String: Any]) { self.object = object }

        /// The longest name (plugin, service id, account, action) the protocol takes.
        static let maxName = 128

        func string(_ key: String) throws(DaemonError) -> String {
            guard let value = try optionalString(key) else { throw DaemonError("\(key): missing") }
            return value
        }

        func optionalString(_ key: String) throws(DaemonError) -> String? {
            guard let value = object[key], !(value is NSNull) else { return nil }
            guard let text = value as? String else { throw DaemonError("\(key): not a string") }
            guard text.utf8.count <= 1024 else { throw DaemonError("\(key): longer than 1024 bytes") }
            return text
        }

        /// A name: 1–128 characters, none of them a space or a control character.
        func name(_ key: String) throws(DaemonError) -> String {
            guard let value = try optionalName(key) else { throw DaemonError("\(key): missing") }
            return value
        }

        func optionalName(_ key: String) throws(DaemonError) -> String? {
            guard let text = try optionalString(key) else { return nil }
            try Self.checkName(text, key)
            return text
        }

        static func checkName(_ text: String, _ key: String) throws(DaemonError) {
            guard !text.isEmpty, text.utf8.count <= maxName,
                !text.unicodeScalars.contains(where: {
                    $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F
                })
            else {
                throw DaemonError("\(key): expected 1–\(maxName) characters without spaces or control characters")
            }
        }

        func int(_ key: String) throws(DaemonError) -> Int {
            // (Foundation on Linux bridges a JSON 1 to Bool too, so a boolean is not told apart.)
            guard let number = object[key] as? NSNumber else {
                throw DaemonError("\(key): missing or not a number")
            }
            let value = number.doubleValue
            guard value.rounded() == value, abs(value) < 9e15 else { throw DaemonError("\(key): not an integer") }
            return Int(value)
        }

        func optionalBool(_ key: String) throws(DaemonError) -> Bool? {
            guard let value = object[key], !(value is NSNull) else { return nil }
            guard let flag = value as? Bool else { throw DaemonError("\(key): not true or false") }
            return flag
        }

        func optionalDouble(_ key: String) throws(DaemonError) -> Double? {
            guard let value = object[key], !(value is NSNull) else { return nil }
            guard let number = value as? NSNumber, number.doubleValue.isFinite else {
                throw DaemonError("\(key): not a number")
            }
            return number.doubleValue
        }

        func object(_ key: String) throws(DaemonError) -> Fields {
            guard let value = object[key] as? [String: Any] else {
                throw DaemonError("\(key): missing or not an object")
            }
            return Fields(value)
        }

        /// An array of names, at most `limit`; absent is empty.
        func names(_ key: String, limit: Int) throws(DaemonError) -> [String] {
            guard let value = object[key], !(value is NSNull) else { return [] }
            guard let items = value as? [Any] else { throw DaemonError("\(key): not an array") }
            guard items.count <= limit else { throw DaemonError("\(key): more than \(limit)") }
            var names: [String] = []
            for item in items {
                guard let text = item as? String else { throw DaemonError("\(key): an item is not a string") }
                try Self.checkName(text, key)
                names.append(text)
            }
            return names
        }

        /// An array of objects, at most `limit`; absent is empty.
        func objects(_ key: String, limit: Int) throws(DaemonError) -> [Fields] {
            guard let value = object[key], !(value is NSNull) else { return [] }
            guard let items = value as? [Any] else { throw DaemonError("\(key): not an array") }
            guard items.count <= limit else { throw DaemonError("\(key): more than \(limit)") }
            var objects: [Fields] = []
            for item in items {
                guard let fields = item as? [String: Any] else { throw DaemonError("\(key): an item is not an object") }
                objects.append(Fields(fields))
            }
            return objects
        }
    }
}
