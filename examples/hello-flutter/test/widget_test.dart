import 'package:flutter_test/flutter_test.dart';
import 'package:hello_flutter/main.dart';

void main() {
  testWidgets('greets', (tester) async {
    await tester.pumpWidget(const HelloApp());
    expect(find.text('Hello from a Roost build'), findsOneWidget);
  });
}
