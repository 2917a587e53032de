import Foundation
import Testing

/// Every Swift block of README.md and the DocC articles is compiled with the tests: each has a
/// copy in a test source (see `DocBlocks`), and these tests fail when a block and its copy drift.
@Suite struct DocBlocksTests {
    @Test func everySwiftBlockOfTheDocumentationHasACompiledCopy() throws {
        let copies = try DocBlocks.copies()
        var checked = 0
        for document in DocBlocks.documents() {
            for block in try DocBlocks.blocks(of: document) where !block.exempt {
                checked += 1
                let sameDocument = copies.filter { $0.document == document }
                let message =
                    "\(block.source): no test source has this block as a `// doc:begin \(document)` region "
                    + "(copies of that document: \(sameDocument.map(\.source))); its first line: "
                    + "\(block.text.prefix { $0 != "\n" })"
                #expect(sameDocument.contains { $0.text == block.text }, Comment(rawValue: message))
            }
        }
        #expect(checked >= 14, "the blocks were found")
    }

    @Test func everyCompiledCopyIsStillABlockOfItsDocument() throws {
        for copy in try DocBlocks.copies() {
            let blocks = try DocBlocks.blocks(of: copy.document)
            #expect(
                blocks.contains { $0.text == copy.text },
                "\(copy.source): its `doc:begin \(copy.document)` region is no block of that document any more")
        }
    }

    @Test func aHiddenWrapperAndItsIndentationAreNotPartOfTheBlock() {
        let lines = [
            "// doc:begin README.md", "import Logging", "", "func wrapper() {  // doc:hidden",
            "    let x = 1", "        .description", "    _ = x  // doc:hidden", "}  // doc:hidden", "// doc:end",
        ]
        let copy = DocBlocks.regions(in: lines, file: "T.swift")
        #expect(copy.map(\.text) == ["import Logging\n\nlet x = 1\n    .description"])
        #expect(copy.map(\.document) == ["README.md"])
    }
}
