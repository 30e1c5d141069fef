import 'package:flutter/material.dart';

void main() => runApp(const HelloApp());

class HelloApp extends StatelessWidget {
  const HelloApp({super.key});

  @override
  Widget build(BuildContext context) {
    return const MaterialApp(
      title: 'Hello, Flutter',
      home: Scaffold(body: Center(child: Text('Hello from a Roost build'))),
    );
  }
}
